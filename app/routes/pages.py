"""HTML pages. Each page reads its state from the URL in the browser and fetches
what it shows from /api/v1 itself, so the server passes no data to the templates."""

import re
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse

from model.lab.lm import RANGES, LmSettings

from ..templates import templates

router = APIRouter(tags=["pages"])


@router.get(
    "/",
    response_class=HTMLResponse,
    summary="Attention explorer page",
    description=(
        "Every layer's and head's attention map for a sentence, and one head large. "
        "The page's state lives in its query string, read by the page's script: "
        "`text`, `pair` (second segment), `model`, `layer`, `head`."
    ),
)
def explorer(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "index.html")


@router.get(
    "/steps",
    response_class=HTMLResponse,
    summary="Step-by-step walkthrough of one attention head",
    description=(
        "Every step of multi-head attention (input, project, split, scores, scale, mask, softmax, "
        "weighted sum, concat, output) with the real numbers of one layer and head, animated, plus the "
        "query/key view of one query token. The page fetches `POST /api/v1/trace` itself; its state "
        "lives in the query string: `text`, `pair` (second segment), `model`, `layer`, `head`, "
        "`query` (a token index) and `step` (a step name). Missing or invalid indices fall back to 0."
    ),
)
def steps(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "steps.html")


@router.get(
    "/toy",
    response_class=HTMLResponse,
    summary="The worked example, editable",
    description=(
        "The worked example (d_model 4, 2 heads) with every matrix editable in place: queries, keys, "
        "values, W_q, W_k, W_v, W_o, the number of heads and a causal mask. Edits are recomputed by "
        "`POST /api/v1/toy` and shown with the same step-by-step walkthrough as /steps. The whole setup "
        "lives in the query string (`q`, `k`, `v`, `wq`, `wk`, `wv`, `wo`: rows split by `;`, numbers by `,`; "
        "`heads`, `causal`, `head`, `query`, `step`), anything equal to the worked example left out."
    ),
)
def toy(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "toy.html")


@router.get(
    "/flash",
    response_class=HTMLResponse,
    summary="FlashAttention, tile by tile, on the worked example",
    description=(
        "One head of the toy's layer through FlashAttention's forward (and, on request, its backward), one tile "
        "at a time: the grid of query blocks x key blocks, the tile's scores, each row's running maximum and sum "
        "with the rescale factor exp(m_old - m_new), the running output beside standard attention's, and what "
        "fast memory holds against the L x S matrix. The page fetches `POST /api/v1/flash` itself; its state "
        "lives in the query string: the /toy setup (`q`, `k`, `v`, `wq`, `wk`, `wv`, `wo`, `heads`, `causal`, "
        "`hidden`, `head`), `br` and `bc` (the block sizes, default 2), `backward` (1: the backward too) and "
        "`tile` (the tile shown: the forward's, then the backward's)."
    ),
)
def flash(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "flash.html")


@router.get(
    "/sequence",
    response_class=HTMLResponse,
    summary="An RNN, a convolution stack and self-attention, side by side",
    description=(
        "The same sequence through a GRU, a stack of causal 1-D convolutions (kernel k, optionally dilated) and "
        "one self-attention layer: the dependency path between two positions i and j in each and the sequential "
        "operations each needs; their forward time, peak memory and training-step time measured on this machine "
        "against N (read from static/data/sequence-sweep.json, written by `python -m bench.sequence_sweep`); and "
        "how far back the last position's gradient reaches in each, from `POST /api/v1/sequence/reach`. Its state "
        "lives in the query string: `n`, `i`, `j`, `k`, `dilated` (1 or 0), `layers` and `d`."
    ),
)
def sequence(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "sequence.html")


@router.get(
    "/positions",
    response_class=HTMLResponse,
    summary="Positional encodings, side by side",
    description=(
        "The sinusoidal table beside the model's learned one as position x dimension heatmaps, how alike two "
        "positions are against their distance, RoPE's angles and its rotation of one pair of dimensions, and "
        "ALiBi's bias of every head. The page fetches `GET /api/v1/positions` itself; its state lives in the "
        "query string: `length`, `d_model`, `heads` and `pair` (RoPE's pair of dimensions)."
    ),
)
def positions(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "positions.html")


@router.get(
    "/iris",
    response_class=HTMLResponse,
    summary="The notes' tiny transformer, trained on Iris in the browser",
    description=(
        "Train the notes' network (Dense 4 -> 32 + ReLU, 4 tokens of 8, attention with 2 heads, mean over the "
        "tokens, Dense 8 -> 3) with attnscope's own backward: loss and accuracy curves and one test flower's "
        "attention maps drawn live from `GET /api/v1/iris/train/{job}/events`, the confusion matrix at the end, "
        "and a prediction for four measurements of your own."
    ),
)
def iris(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "iris.html")


@router.get(
    "/induction",
    response_class=HTMLResponse,
    summary="The induction-head lab: a two-layer attention-only transformer learning to copy, live",
    description=(
        "Train the lab's attention-only transformer on random sequences that end in a repeat (R R) and watch it "
        "learn: the loss on each half with the drop marked, every head's previous-token and induction scores, the "
        "watched sequence's maps, and the two-head circuit explained with the model's own weights, drawn live "
        "from `GET /api/v1/labs/induction/train/{job}/events`."
    ),
)
def induction(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "induction.html")


LM_FIELDS = ("steps", "seed", "context", "layers", "heads", "d_model")  # the /lm form's number fields


@router.get(
    "/lm",
    response_class=HTMLResponse,
    summary="Grow a small GPT from your own text, then open it like any other model",
    description=(
        "Paste or upload a text and train a small character-level GPT on it on the server (`POST "
        "/api/v1/labs/lm/train`): the loss against steps with the text's unigram and bigram entropies marked, a "
        "generated sample at each evaluation, and once trained, the heads that became previous-token, "
        "induction-like or positional heads, each with links that open it in the explorer and /steps on the "
        "learner's sentence. The models trained on the server are listed, and can be deleted. State in the query "
        "string: `job` (the run on screen, replayed from the server's events) and `sentence`."
    ),
)
def lm(request: Request) -> HTMLResponse:
    defaults = LmSettings()  # the form starts at the training's own defaults and ranges (model/lab/lm.py)
    numbers = [(name, *RANGES[name], getattr(defaults, name)) for name in LM_FIELDS]
    return templates.TemplateResponse(request, "lm.html", {"numbers": numbers})


@router.get(
    "/seq2seq",
    response_class=HTMLResponse,
    summary="The encoder-decoder lab: Bahdanau attention learning to align, beside the bottleneck without it",
    description=(
        "Train a GRU encoder-decoder with Bahdanau's additive attention on reversing letters or on writing dates "
        "in ISO form, and the same decoder without attention beside it: the watched example's alignment map "
        "sharpening, loss and accuracy, accuracy against input length for both, and the alignment of a text of "
        "your own, drawn live from `GET /api/v1/labs/seq2seq/train/{job}/events`."
    ),
)
def seq2seq(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "seq2seq.html")


@router.get(
    "/informer",
    response_class=HTMLResponse,
    summary="The Informer lab: ProbSparse self-attention against full attention forecasting a real series, live",
    description=(
        "Train a small Informer-style encoder twice with the same settings, once with ProbSparse self-attention and "
        "once with full attention, on the weekly Mauna Loa CO₂ series or the yearly sunspot numbers: both networks' "
        "validation MSE against the step and the seconds drawn live from "
        "`GET /api/v1/labs/informer/train/{job}/events`, their test MSE beside the seasonal-naive and linear "
        "forecasts', a test window's forecasts and every layer's attention from `POST /api/v1/labs/informer/watch` "
        "(the active queries marked, the length halving from layer to layer), and one forward's time and memory "
        "against the window length read from static/data/informer-sweep.json (written by `python -m "
        "bench.informer`). Its state lives in the query string: `series`, `window`, `horizon`, `steps`, `factor`, "
        "`seed`, and `job` and `full` (the ProbSparse and the full-attention job)."
    ),
)
def informer(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "informer.html")


@router.get(
    "/glimpse",
    response_class=HTMLResponse,
    summary="The glimpse lab: hard attention trained four ways (soft, REINFORCE, Gumbel-softmax, straight-through)",
    description=(
        "Train the same digit reader (a CNN over a 3 × 3 canvas of handwritten digits, a GRU decoder attending over "
        "its 9 cells) four ways, two jobs at a time: soft attention, and a hard glimpse at one cell trained by "
        "REINFORCE, by Gumbel-softmax or straight-through (and, on request, REINFORCE without its baseline): each "
        "run's accuracy and loss against the step and the seconds, the attention's entropy and the variance of its "
        "gradient estimate drawn live from `GET /api/v1/labs/glimpse/train/{job}/events`, the test accuracies in a "
        "table with sentences computed from them, and where each method looks on held-out canvases, step by step. "
        "Its state lives in the query string: `steps`, `seed`, `baseline` (0: REINFORCE without its baseline too) "
        "and one job id per run (`soft`, `reinforce`, `gumbel`, `straight_through`, `nobaseline`)."
    ),
)
def glimpse(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "glimpse.html")


@router.get(
    "/cost",
    response_class=HTMLResponse,
    summary="What attention costs: parameters, memory and FLOPs",
    description=(
        "Parameters, the attention matrix's memory, the backward cache, FLOPs and FlashAttention's working set "
        "for any E, H, S and B, against the sequence length on a log-log plot, with presets for the notes' "
        "example, the Iris layer and each served model. The page fetches `GET /api/v1/cost` itself."
    ),
)
def cost(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "cost.html")


@router.get(
    "/compare",
    response_class=HTMLResponse,
    summary="Compare two sentences' attention",
    description=(
        "One head's attention map for two sentences A and B. When their tokens line up (as many tokens, with the "
        "special tokens and the segments at the same positions), the difference A - B is drawn on a diverging scale "
        "beside A and B; otherwise A and B side by side with one layer and head picker. Word view and hidden special "
        "tokens apply to both; every figure downloads as PNG or SVG and its numbers as JSON or CSV. The page fetches "
        "`POST /api/v1/attention?encoding=u16` itself; its state lives in the query string: `a`, `a_pair`, `b`, "
        "`b_pair`, `model`, `layer`, `head`, `words` (1: word view) and `hide_special` (1: special tokens hidden)."
    ),
)
def compare(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "compare.html")


@router.get(
    "/corpus",
    response_class=HTMLResponse,
    summary="One head across a whole corpus: its top texts and every head by two metrics",
    description=(
        "The corpus index the server was started with (`attnscope serve --corpus DIR`): one head's top texts by a "
        "metric, highest or lowest, or by two token patterns, each drawn with the head's strongest query -> key "
        "pairs and linked to the explorer at that head, and every head as a point by two metrics (a click chooses "
        "it). Without a corpus the page says how to build and serve one. The page fetches `GET /api/v1/corpus`, "
        "`/api/v1/corpus/top`, `/api/v1/corpus/pattern` and `/api/v1/corpus/heads` itself; its state lives in the "
        "query string: `layer`, `head`, `by`, `lowest` (1: lowest first), `k`, `query` and `key` (the patterns), "
        "`x` and `y` (the scatter's metrics)."
    ),
)
def corpus(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "corpus.html")


LEARN_CHAPTERS = 17  # static/js/learn/chapters.js lists them, in this order
LEARN_DESCRIPTION = (
    "Seventeen short chapters on attention, each around the learner's own sentence or the notes' worked example, with "
    "one live view: where attention came from (the encoder-decoder bottleneck, Bahdanau's additive attention); "
    "query, key and value; one head by hand (and why scores are divided by √d_k); ways to score and to choose; "
    "many heads; self, cross and masked attention; order and positions; a real model; learning; induction heads; "
    "cost (the attention matrix, the KV cache); linear attention and FlashAttention; the Transformer block; RNN, "
    "convolution or attention; forecasting with sparse attention (Informer's ProbSparse); hard attention that "
    "learns (REINFORCE, Gumbel-softmax, straight-through); growing a small GPT of one's own from a text. `/learn` "
    "lists them, "
    f"`/learn/{{chapter}}` (1 to {LEARN_CHAPTERS}) shows one; any other chapter is a 404 page in the chosen "
    "language that lists them. The state lives in the query string: `text` (the sentence) and each chapter's own "
    "settings; the chapters seen are kept in the browser only."
)
CHAPTER_NUMBER = re.compile(r"[1-9][0-9]{0,3}")  # a chapter's number as the page's script reads it (no sign, no 0)


@router.get(
    "/learn", response_class=HTMLResponse, summary="A guided path through attention", description=LEARN_DESCRIPTION
)
def learn(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "learn.html")


@router.get(
    "/learn/{chapter}",
    response_class=HTMLResponse,
    summary="One chapter of the guided path",
    description=LEARN_DESCRIPTION,
    responses={404: {"description": f"The chapter is not a whole number from 1 to {LEARN_CHAPTERS}: the path's page "
                                    "with its contents and a note that says so.",
                     "content": {"text/html": {}}}},
)
def learn_chapter(
    request: Request,
    # read as text so that any other chapter gets the page (404), not a JSON refusal; documented as the numbers it takes
    chapter: Annotated[str, Path(description=f"1 to {LEARN_CHAPTERS}", json_schema_extra={
        "type": "integer", "minimum": 1, "maximum": LEARN_CHAPTERS})],
) -> HTMLResponse:
    found = CHAPTER_NUMBER.fullmatch(chapter) is not None and int(chapter) <= LEARN_CHAPTERS
    return templates.TemplateResponse(request, "learn.html", status_code=200 if found else 404)
