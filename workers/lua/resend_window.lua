-- A retried submit (its first attempt died before it recorded "published") publishes the chunks
-- claimed so far again: those not merged. Each gets a fresh publish time and loses the
-- reconciler's "missing" mark, so that the reconciler, seeing the new copies as just published,
-- does not publish them a second time (workers/dispatch.py).
--
-- KEYS: 1 meta, 2 done, 3 chunks
-- ARGV: 1 now, 2 TTL seconds
-- Returns the chunk indices to publish.
local meta, done, chunks = KEYS[1], KEYS[2], KEYS[3]
local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {} end
local nxt = tonumber(redis.call('HGET', meta, 'next') or redis.call('HGET', meta, 'chunks_total'))
local first = 0
if redis.call('HGET', meta, 'ordered') == '1' then
  first = tonumber(redis.call('HGET', meta, 'prefix') or '0')
end
local out = {}
for c = first, nxt - 1 do
  if redis.call('GETBIT', done, c) == 0 then
    redis.call('HSET', chunks, 'q:' .. c, ARGV[1])
    redis.call('HDEL', chunks, 'm:' .. c)
    out[#out + 1] = c
  end
end
if #out > 0 then redis.call('EXPIRE', chunks, ARGV[2]) end
return out
