// One- or two-sentence explanations of each step of multi-head attention, one dictionary per language.
// Keys are the STEPS names of model/steps.py: `label` names the step in the step list, `title` and `body`
// explain it; {scale}, {dHead}, {nHeads}, {head} and {query} are filled in by the page.

export const STEP_TEXT = {
  en: {
    input: {
      label: "Input",
      title: "Input X",
      body: "Each row is one token's hidden state as it enters this layer's attention: a vector of d_model numbers.",
    },
    project: {
      label: "Project",
      title: "Project: Q, K, V = X·W + b",
      body: "Three learned linear maps turn every token into a query (what it looks for), a key (what it offers) and a value (what it passes on).",
    },
    split: {
      label: "Split",
      title: "Split into heads",
      body: "The d_model columns are cut into {nHeads} slices of {dHead}; head {head} works only with its own slice of Q, K and V.",
    },
    scores: {
      label: "Scores",
      title: "Scores = Q_h · K_hᵀ",
      body: "Every query is compared with every key by a dot product: a large score means the two vectors point the same way.",
    },
    scale: {
      label: "Scale",
      title: "Scale by 1/√d_head = {scale}",
      body: "Dot products grow with the width of the vectors; multiplying by 1/√d_head keeps them in a range where softmax is not saturated.",
    },
    mask: {
      label: "Mask",
      title: "Mask",
      body: "Positions a query must not see get −∞ added, so they receive zero weight after softmax.",
    },
    softmax: {
      label: "Softmax",
      title: "Softmax over keys",
      body: "Each row becomes a probability distribution: exponentiate, then divide by the row's sum. Row {query} shows where that token looks.",
    },
    weighted_sum: {
      label: "Weighted sum",
      title: "Weighted sum of V",
      body: "Each query's output is the average of the value rows, weighted by its softmax row: tokens with more weight contribute more.",
    },
    concat: {
      label: "Concat",
      title: "Concatenate heads",
      body: "The {nHeads} heads' outputs are placed side by side again, giving back d_model columns; head {head} fills its own slot.",
    },
    output: {
      label: "Output",
      title: "Output projection",
      body: "A last linear map W_o mixes the heads' information. The result is then added to the input (residual) and normalised.",
    },
    notes: {
      noMask: "Nothing is hidden for this input: every query sees every key, so this step changes no number.",
      causal: "Causal mask: query i may only look at keys 0…i, so everything right of the diagonal is hidden.",
    },
  },
  zh: {
    input: {
      label: "输入",
      title: "输入 X",
      body: "每一行是一个词元进入本层注意力时的隐藏状态，即一个 d_model 维的向量。",
    },
    project: {
      label: "投影",
      title: "投影：Q、K、V = X·W + b",
      body: "三个可学习的线性变换把每个词元变成查询（它要找什么）、键（它能提供什么）和值（它要传递的内容）。",
    },
    split: {
      label: "拆分",
      title: "拆分成多头",
      body: "把 d_model 列切成 {nHeads} 份，每份 {dHead} 列；第 {head} 个头只使用自己那一份 Q、K、V。",
    },
    scores: {
      label: "打分",
      title: "打分 = Q_h · K_hᵀ",
      body: "每个查询都与每个键做点积：分数越大，说明两个向量的方向越接近。",
    },
    scale: {
      label: "缩放",
      title: "缩放：乘以 1/√d_head = {scale}",
      body: "向量越宽，点积越大；乘以 1/√d_head 可以把分数拉回合适的范围，避免 softmax 过于饱和。",
    },
    mask: {
      label: "掩码",
      title: "掩码",
      body: "查询不应看到的位置会被加上 −∞，经过 softmax 后权重为零。",
    },
    softmax: {
      label: "Softmax",
      title: "对键做 softmax",
      body: "每一行先取指数再除以行和，变成一个概率分布。第 {query} 行表示该词元把注意力放在哪里。",
    },
    weighted_sum: {
      label: "加权求和",
      title: "对 V 加权求和",
      body: "每个查询的输出是各个值向量按其 softmax 权重求得的加权平均：权重越大的词元贡献越多。",
    },
    concat: {
      label: "拼接",
      title: "拼接各头",
      body: "把 {nHeads} 个头的输出重新并排拼接，恢复成 d_model 列；第 {head} 个头占据属于自己的位置。",
    },
    output: {
      label: "输出",
      title: "输出投影",
      body: "最后一个线性变换 W_o 把各头的信息混合起来；之后再与输入做残差相加并归一化。",
    },
    notes: {
      noMask: "这个输入没有需要遮住的位置：每个查询都能看到所有键，所以这一步不改变任何数值。",
      causal: "因果掩码：第 i 个查询只能看到第 0…i 个键，对角线右侧全部被遮住。",
    },
  },
};

/** The explanation of `step` in `lang` with its placeholders filled from `values`. */
export function stepText(step, lang, values = {}) {
  const entry = (STEP_TEXT[lang] || STEP_TEXT.en)[step];
  const fill = (s) => s.replace(/\{(\w+)\}/g, (m, key) => (key in values ? String(values[key]) : m));
  return { label: entry.label, title: fill(entry.title), body: fill(entry.body) };
}

/** A note shown with a step (noMask, causal) in `lang`. */
export function stepNote(key, lang) {
  return (STEP_TEXT[lang] || STEP_TEXT.en).notes[key];
}
