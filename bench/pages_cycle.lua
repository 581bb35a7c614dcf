-- wrk script for cycle_bench.py's "pages" mode: the loop an annotator's browser goes through, one
-- connection per thread (-t C -c C), each thread one annotator (a line "token<TAB>session cookie" of
-- the annotators file; only the cookie is used). The browser's loop, as static/js/app.js and the
-- screen's htmx attributes make it:
--   GET /stages/{id}/annotate (the start page, for its CSRF token: a GET never leases), its start
--   button's POST /stages/{id}/annotate (303 to the claimed item's screen), GET /assignments/{id}, then
--   POST /assignments/{id}/submit, the plain form (CSRF token, idempotency key, the answer of the
--   answers file, one URL-encoded form a line, taken in turn), answered with the next item's screen,
--   claimed and rendered in the same request, whole (its stage's bar and the prefetch links for the
--   item after it are in it); and again. (The prefetched images are not fetched: they are static
--   files, cached by the browser, and served by the asset route, not the annotation path.)
-- "items" counts submits answered 200 with the next item's screen; anything else is an error.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "wrk_common.lua")  -- setup() and done()

function init(args)
  stage = args[2]
  local people = {}
  for line in io.lines(args[3]) do table.insert(people, line) end
  local cookie = people[(n - 1) % #people + 1]:match("[^\t]+\t(.+)")
  page = {["Cookie"] = cookie}
  form = {["Cookie"] = cookie, ["Content-Type"] = "application/x-www-form-urlencoded", ["Accept"] = "text/html"}
  answers = {}
  for line in io.lines(args[4]) do table.insert(answers, line) end
  state, aid, csrf, key, opened, items, errors, k, first_error = "start", nil, nil, nil, nil, 0, 0, 0, ""
end

local function failed(status, body)
  errors = errors + 1
  local missing = ""
  for name, value in pairs({form = aid, csrf_token = csrf, idempotency_key = key, opened_at = opened, bar = bar}) do
    if not value then missing = missing .. " " .. name end
  end
  if missing ~= "" then missing = "(not found on the screen:" .. missing .. ") " end
  local said = missing .. ((body or ""):match('<div class="error" role="alert"><p>(.-)</p>') or (body or ""):sub(1, 200))
  if first_error == "" then first_error = state .. " " .. status .. " " .. said:gsub("[\r\n\t]", " ") end
  state = "start"
end

-- What the browser reads off a screen: the form's address and hidden fields (and the screen must hold its stage's bar).
local function read_screen(body)
  aid = body:match('action="/assignments/(%d+)/submit"')
  csrf = body:match('name="csrf_token" value="([^"]+)"')
  key = body:match('name="idempotency_key" value="([^"]+)"')
  opened = body:match('name="opened_at" value="([^"]+)"')
  bar = body:find('<div class="stage-bar"', 1, true)
  return aid and csrf and key and opened and bar
end

function request()
  if state == "start" then return wrk.format("GET", "/stages/" .. stage .. "/annotate", page) end
  if state == "claim" then return wrk.format("POST", "/stages/" .. stage .. "/annotate", form, "csrf_token=" .. csrf) end
  if state == "screen" then return wrk.format("GET", "/assignments/" .. aid, page) end
  k = k + 1
  local body = "csrf_token=" .. csrf .. "&idempotency_key=" .. key .. "&opened_at=" .. opened .. "&" .. answers[(n + k) % #answers + 1]
  return wrk.format("POST", "/assignments/" .. aid .. "/submit", form, body)
end

function response(status, hdrs, body)
  if state == "start" then
    csrf = status == 200 and (body or ""):match('name="csrf_token" value="([^"]+)"')
    aid = status == 303 and (hdrs["location"] or hdrs["Location"] or ""):match("^/assignments/(%d+)$")
    if aid then state = "screen" elseif csrf then state = "claim" else failed(status, body) end
  elseif state == "claim" then
    aid = status == 303 and (hdrs["location"] or hdrs["Location"] or ""):match("^/assignments/(%d+)$")
    if aid then state = "screen" else failed(status, body) end
  elseif state == "screen" then
    if status == 200 and read_screen(body) then state = "submit" else failed(status, body) end
  elseif state == "submit" then
    if status == 200 and read_screen(body) and not body:find('<div class="error" role="alert">', 1, true) then
      items = items + 1
    else
      failed(status, body)
    end
  end
end
