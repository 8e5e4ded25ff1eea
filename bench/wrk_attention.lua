-- wrk script: POST /api/v1/attention?encoding=u16 with a fresh 32-token text on every request.
-- The words below are single tokens of the model, so 30 of them plus [CLS] and [SEP] make 32 tokens.
local words = {"the", "city", "river", "school", "music", "light", "house", "water", "story", "world",
               "night", "field", "market", "history", "north", "south", "game", "money", "party", "team"}
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local counter = 0

request = function()
  counter = counter + 1
  local parts = {tostring(counter)}  -- a number makes every text unique (it may be 1-3 tokens)
  for i = 1, 29 do
    parts[#parts + 1] = words[math.random(#words)]
  end
  return wrk.format(nil, nil, nil, '{"text": "' .. table.concat(parts, " ") .. '"}')
end
