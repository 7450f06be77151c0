-- Merge one chunk's counters into its job, atomically (DESIGN.md §5; notes/service.md §1.4).
--
-- KEYS: 1 meta (hash), 2 counters (hash), 3 done (bitmap, one bit per chunk), 4 chunks (hash of
--       per-chunk bookkeeping), 5 active-jobs set, 6 the request-id key (or the meta key again)
-- ARGV: 1 job id, 2 chunk index, 3 games in the chunk, 4 now (unix seconds, text), 5 TTL seconds,
--       6 n = number of additive pairs, then n (field, increment) pairs, then (field, value) pairs
--       of 'min|' / 'max|' fields, which keep the smaller / larger value.
-- Returns {code, state}: code -1 the job is not QUEUED/RUNNING (nothing changed), 0 the chunk was
-- already merged (a duplicate: nothing changed), 1 merged, 2 merged and the job is now SUCCEEDED.
local meta, counters, done, chunks, active = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local job_id, c, games, now, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {-1, state or ''} end
local total = tonumber(redis.call('HGET', meta, 'chunks_total'))
if tonumber(c) >= total then return redis.error_reply('chunk index ' .. c .. ' out of range') end
if redis.call('SETBIT', done, c, 1) == 1 then return {0, state} end

-- redis.call in batches of `step` list items (unpack's stack limit); the replies, concatenated.
local function batched(cmd, list, step)
  local out = {}
  for from = 1, #list, step do
    local got = redis.call(cmd, counters, unpack(list, from, math.min(from + step - 1, #list)))
    if type(got) == 'table' then
      for _, v in ipairs(got) do out[#out + 1] = v end
    end
  end
  return out
end

-- The additive counters: one HINCRBY each (exact to 2^63). Summing them in Lua after one HMGET
-- and writing them back with one HSET was tried: the Lua-side tonumber/format work cost more Redis
-- CPU than the HINCRBY calls it saved (bench/scale.py: 0.40 -> 0.60 ms per 2p merge).
local n = tonumber(ARGV[6])
local i = 7
for _ = 1, n do
  redis.call('HINCRBY', counters, ARGV[i], ARGV[i + 1])
  i = i + 2
end
-- The extrema: HMGET them and HSET those that move (game figures: scores, rounds, margins, far
-- below 2^53), instead of an HGET (+ HSET) per field.
if i < #ARGV then
  local fields = {}
  for j = i, #ARGV - 1, 2 do fields[#fields + 1] = ARGV[j] end
  local current = batched('HMGET', fields, 500)
  local changed = {}
  for k, field in ipairs(fields) do
    local value, now_v = ARGV[i + 2 * k - 1], current[k]
    local take = not now_v
    if not take then
      if string.sub(field, 1, 4) == 'min|' then
        take = tonumber(value) < tonumber(now_v)
      else
        take = tonumber(value) > tonumber(now_v)
      end
    end
    if take then
      changed[#changed + 1] = field
      changed[#changed + 1] = value
    end
  end
  if #changed > 0 then batched('HSET', changed, 1000) end
end

if state == 'QUEUED' then
  redis.call('HSET', meta, 'state', 'RUNNING', 'started_at', now)
  state = 'RUNNING'
end
forget_chunk(chunks, c)
local chunks_done = redis.call('HINCRBY', meta, 'chunks_done', 1)
redis.call('HINCRBY', meta, 'games_done', games)
redis.call('HSET', meta, 'updated_at', now)
local keys = {meta, counters, done, chunks, KEYS[6]}
if chunks_done >= total then
  redis.call('DEL', chunks)
  finish(meta, keys, active, job_id, 'SUCCEEDED', now, ttl, '')
  return {2, 'SUCCEEDED'}
end
-- Refresh the idle expiry: a job that nobody works on for a whole TTL goes away.
for _, key in ipairs(keys) do redis.call('EXPIRE', key, ttl) end
return {1, state}
