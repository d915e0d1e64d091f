-- wrk script: each request logs in as the next of the users whose session
-- cookies are in the file named by $COOKIES (one a line, as webbench
-- writes them), so that the connections load the dashboards of all of them.
--   COOKIES=DATA/cookies.txt wrk -t2 -c16 -d20s --latency -s cmd/webbench/users.lua http://127.0.0.1:8399/
local cookies = {}
for line in io.lines(os.getenv("COOKIES")) do
  if line ~= "" then cookies[#cookies + 1] = line end
end
local i = 0
request = function()
  i = i % #cookies + 1
  return wrk.format("GET", nil, { ["Cookie"] = cookies[i] })
end
