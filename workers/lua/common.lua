-- Shared helpers, prepended to every script of workers/lua by workers.store (Redis 6.2+, Lua 5.1).
-- Numbers that may exceed 2^53 (counter increments) are never tonumber()'d: HINCRBY takes the
-- decimal string as it is. Every check that can refuse comes before the first write, because a
-- script that errors half-way does not roll back.

local ACTIVE = {QUEUED = true, RUNNING = true}

-- Move a job to a final state: state, finished_at, error, out of the active set, and the TTL on
-- every key of the job. `keys` is the list of the job's keys; `active` the active-jobs set.
local function finish(meta, keys, active, job_id, state, now, ttl, err)
  redis.call('HSET', meta, 'state', state, 'finished_at', now, 'updated_at', now)
  if err and err ~= '' then redis.call('HSET', meta, 'error', err) end
  redis.call('SREM', active, job_id)
  for _, key in ipairs(keys) do redis.call('EXPIRE', key, ttl) end
end

-- Drop the per-chunk bookkeeping fields (starts, last start, republishes, last publish, error,
-- lease deadline, the reconciler's "missing" mark).
local function forget_chunk(chunks, c)
  redis.call('HDEL', chunks, 's:' .. c, 't:' .. c, 'p:' .. c, 'q:' .. c, 'e:' .. c, 'l:' .. c,
             'm:' .. c)
end

-- redis.call in batches of `step` list items (unpack's stack limit); the replies, concatenated.
local function batched(cmd, counters, list, step)
  local out = {}
  for from = 1, #list, step do
    local got = redis.call(cmd, counters, unpack(list, from, math.min(from + step - 1, #list)))
    if type(got) == 'table' then
      for _, v in ipairs(got) do out[#out + 1] = v end
    end
  end
  return out
end

-- Apply a chunk's counters to the job's `counters` hash: ARGV[first] = n additive pairs, then n
-- (field, increment) pairs, then ('min|' / 'max|' field, value) pairs to the end of ARGV.
local function merge_counters(counters, first)
  local n = tonumber(ARGV[first])
  local i = first + 1
  -- The additive counters: one HINCRBY each (exact to 2^63). Summing them in Lua after one HMGET
  -- and writing them back with one HSET was tried: the Lua-side tonumber/format work cost more Redis
  -- CPU than the HINCRBY calls it saved (bench/scale.py: 0.40 -> 0.60 ms per 2p merge).
  for _ = 1, n do
    redis.call('HINCRBY', counters, ARGV[i], ARGV[i + 1])
    i = i + 2
  end
  -- The extrema: HMGET them and HSET those that move (game figures: scores, rounds, margins, far
  -- below 2^53), instead of an HGET (+ HSET) per field.
  if i < #ARGV then
    local fields = {}
    for j = i, #ARGV - 1, 2 do fields[#fields + 1] = ARGV[j] end
    local current = batched('HMGET', counters, fields, 500)
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
    if #changed > 0 then batched('HSET', counters, changed, 1000) end
  end
end
