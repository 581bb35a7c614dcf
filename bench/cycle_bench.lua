-- wrk script for cycle_bench.py: one connection per thread (-t C -c C), each thread one annotator
-- (a line "token<TAB>session cookie" of the annotators file). The cycle: POST claim (bearer token),
-- GET /assignments/{id} (the annotation screen, with the page session's cookie; left out in mode
-- "no-screen"), POST submit with the next answer of the payloads file (one JSON payload a line, taken
-- in turn), and again. "items" counts submits answered 200; anything else that is not 200 is an error.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "wrk_common.lua")  -- setup() and done()

function init(args)
  mode, stage = args[1], args[2]
  local people = {}
  for line in io.lines(args[3]) do table.insert(people, line) end
  local token, cookie = people[(n - 1) % #people + 1]:match("([^\t]+)\t(.+)")
  api = {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}
  page = {["Cookie"] = cookie}
  payloads = {}
  for line in io.lines(args[4]) do table.insert(payloads, line) end
  state, aid, items, errors, key, first_error = "claim", nil, 0, 0, 0, ""
end

local function failed(status, body)
  errors = errors + 1
  if first_error == "" then first_error = state .. " " .. status .. " " .. (body or ""):sub(1, 200):gsub("[\r\n\t]", " ") end
end

function request()
  if state == "screen" then
    return wrk.format("GET", "/assignments/" .. aid, page)
  end
  if state == "submit" then
    key = key + 1
    local body = '{"payload": ' .. payloads[(n + key) % #payloads + 1] .. ', "idempotency_key": "c' .. n .. '-' .. key .. '-' .. aid .. '"}'
    return wrk.format("POST", "/api/v1/assignments/" .. aid .. "/submit", api, body)
  end
  return wrk.format("POST", "/api/v1/stages/" .. stage .. "/claim", api, "")
end

function response(status, hdrs, body)
  if state == "claim" then
    aid = status == 200 and body:match('"assignment_id"%s*:%s*(%d+)')
    if aid then
      state = mode == "no-screen" and "submit" or "screen"
    else
      failed(status, body)  -- 204 (the stage ran dry for this annotator) counts too
    end
  elseif state == "screen" then
    -- The real screen: 200 with the item's submit form (a redirect to /login would be a 303).
    if status == 200 and body:find("/assignments/" .. aid .. "/submit", 1, true) then
      state = "submit"
    else
      failed(status, body)
      state = "claim"
    end
  else
    if status == 200 then items = items + 1 else failed(status, body) end
    state = "claim"
  end
end
