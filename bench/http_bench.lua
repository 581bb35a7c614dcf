-- wrk script for http_bench.py: one connection per thread (-t C -c C), each thread one annotator token.
-- mode "claim": POST claim again and again (after the first, the annotator's live lease comes back);
-- mode "fresh": claim, then release the claimed item, and again (every claim takes a fresh item);
-- mode "cycle": claim, then submit the claimed item, and again. "items" counts fresh claims (fresh)
-- or submits (cycle).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "wrk_common.lua")  -- setup() and done()

function init(args)
  mode, stage = args[1], args[2]
  local tokens = {}
  for line in io.lines(args[3]) do table.insert(tokens, line) end
  token = tokens[(n - 1) % #tokens + 1]
  headers = {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}
  state, aid, items, errors, key = "claim", nil, 0, 0, 0
end

function request()
  if state == "submit" then
    key = key + 1
    local body = '{"payload": {"choice": "a"}, "idempotency_key": "w' .. n .. '-' .. key .. '-' .. aid .. '"}'
    return wrk.format("POST", "/api/v1/assignments/" .. aid .. "/submit", headers, body)
  end
  if state == "release" then
    return wrk.format("POST", "/api/v1/assignments/" .. aid .. "/release", headers, "")
  end
  return wrk.format("POST", "/api/v1/stages/" .. stage .. "/claim", headers, "")
end

function response(status, hdrs, body)
  if status >= 400 or (status == 204 and state == "claim") then errors = errors + 1 end
  if mode == "claim" then return end
  if state == "claim" then
    if status == 200 then
      aid = body:match('"assignment_id"%s*:%s*(%d+)')
      if aid and mode == "fresh" then
        items = items + 1
        state = "release"
      elseif aid then
        state = "submit"
      end
    end
  elseif state == "release" then
    state = "claim"
  else
    if status == 200 then items = items + 1 end
    state = "claim"
  end
end
