// mongosh scenario against a server with --rate-limiting: a collection of
// the default 400 RU/s driven over its budget refuses requests with Cosmos
// DB's 16500 TooManyRequests, which the shell shows as
// "MongoServerError[TooManyRequests]: Error=16500, RetryAfterMs=...". A
// refused write changes nothing, and waiting RetryAfterMs lets it through.
//
// Not a mongosh_*.js of clients/: TestClients runs it against its second
// server, the one with rate limiting on.
const assert = require('assert');

const name = 'mongosh_throttle';
const d = db.getSiblingDB(name);
d.dropDatabase();

// fails runs f and returns the error it throws (see mongosh_errors.js:
// shell calls are asynchronous underneath, so no assert.throws).
function fails(label, f) {
  try { f(); } catch (e) { return e; }
  assert.fail(label + ': no error');
}

// throttled checks e is the 16500 a person reads and returns RetryAfterMs,
// at most maxMs.
function throttled(label, e, maxMs) {
  const got = `${e.name} ${e.code} ${e.codeName} ${e.message}`;
  assert.strictEqual(e.code, 16500, label + ': ' + got);
  assert.strictEqual(e.codeName, 'TooManyRequests', label + ': ' + got);
  assert.ok(/Request rate is large\. More Request Units may be needed, so no changes were made\./.test(e.message), label + ': ' + got);
  const m = /^Error=16500, RetryAfterMs=(\d+), /.exec(e.message);
  assert.ok(m, label + ': no RetryAfterMs: ' + got);
  const ms = Number(m[1]);
  assert.ok(ms >= 1 && ms <= maxMs, label + ': RetryAfterMs=' + ms);
  return ms;
}

assert.strictEqual(d.createCollection('big').ok, 1);
const info = d.runCommand({ customAction: 'GetCollection', collection: 'big' });
assert.strictEqual(info.provisionedThroughput, 400);
assert.strictEqual(d.runCommand({ customAction: 'GetPartitionStats', collection: 'big' }).rateLimiting, true);

// Inserts of 100 KB items (about 50 RU each) one after another: the
// bucket holds one second of 400 RU/s, so the 9th or so is refused. Bounded
// in count and time: 200 inserts or 20 seconds.
const pad = 'x'.repeat(100 * 1024);
let refused = null;
let accepted = 0;
const start = Date.now();
while (accepted < 200 && Date.now() - start < 20000) {
  try {
    d.big.insertOne({ _id: accepted, pad });
  } catch (e) {
    refused = e;
    break;
  }
  accepted++;
}
assert.ok(refused, `${accepted} inserts of 100 KB in ${Date.now() - start} ms and none refused`);
assert.strictEqual(refused.name, 'MongoServerError');
// An insert of 100 KB costs about 50 RU: at 400 RU/s the budget can pay
// it again within about 125 ms.
const insertWait = 1000;
let retryAfter = throttled('insertOne', refused, insertWait);
assert.ok(accepted >= 1 && accepted < 100, accepted + ' inserts accepted before the first refusal');
// What the shell prints for it.
assert.ok(`${refused.name}[${refused.codeName}]: ${refused.message}`.startsWith('MongoServerError[TooManyRequests]: Error=16500, RetryAfterMs='));
assert.strictEqual(refused.errorResponse.ok, 0);
assert.deepStrictEqual(Array.from(refused.errorLabels || []), [], 'no retryable-write label: drivers do not retry 16500 themselves');
// getLastRequestStatistics reports the refused command.
assert.strictEqual(d.runCommand({ getLastRequestStatistics: 1 }).CommandName, 'insert');

// The application's retry: wait RetryAfterMs and send the same insert
// again, a few times at most.
let stored = false;
for (let attempt = 0; attempt < 5 && !stored; attempt++) {
  sleep(retryAfter + 10);
  try {
    d.big.insertOne({ _id: accepted, pad });
    stored = true;
  } catch (e) {
    retryAfter = throttled('retried insertOne', e, insertWait);
  }
}
assert.ok(stored, 'the insert still refused after 5 waits of RetryAfterMs');
accepted++;

// No changes were made by refused requests: the budget refills (1 s),
// then every accepted item is there and no other.
sleep(1100);
assert.strictEqual(d.big.countDocuments({}), accepted);
sleep(1100);
assert.strictEqual(d.big.findOne({ _id: accepted }), null);

// An ordered insertMany stops at the first refused item: mongosh shows a
// MongoBulkWriteError whose write error is the 16500.
sleep(1100);
const docs = [];
for (let i = 0; i < 30; i++) docs.push({ _id: 'm' + i, pad });
const bulk = fails('insertMany', () => d.big.insertMany(docs));
assert.strictEqual(bulk.name, 'MongoBulkWriteError', `${bulk.name} ${bulk.message}`);
assert.strictEqual(bulk.code, 16500);
const inserted = bulk.result.insertedCount;
assert.ok(inserted >= 1 && inserted < 30, inserted + ' of 30 inserted');
assert.strictEqual(bulk.writeErrors.length, 1);
assert.strictEqual(bulk.writeErrors[0].index, inserted);
assert.strictEqual(bulk.writeErrors[0].code, 16500);
throttled('insertMany write error', { code: 16500, codeName: 'TooManyRequests', message: bulk.writeErrors[0].errmsg }, insertWait);
sleep(1100);
assert.strictEqual(d.big.countDocuments({ _id: /^m/ }), inserted);

// Reads are throttled too: a query reading every 100 KB item costs about
// 10 RU an item, some 200 RU for the twenty or so stored. A read is
// admitted for 1 RU and pays the rest when done, so the debt it leaves
// takes up to about half a second to pay back.
sleep(1100);
let readErr = null;
let reads = 0;
const readStart = Date.now();
while (reads < 500 && Date.now() - readStart < 20000) {
  try {
    d.big.find({ pad: { $exists: true } }, { _id: 1 }).toArray();
  } catch (e) {
    readErr = e;
    break;
  }
  reads++;
}
assert.ok(readErr, `${reads} queries in ${Date.now() - readStart} ms and none refused`);
assert.strictEqual(readErr.name, 'MongoServerError');
throttled('find', readErr, 2000);

// The partition statistics count the refusals.
sleep(1100);
const ps = d.runCommand({ customAction: 'GetPartitionStats', collection: 'big' });
assert.strictEqual(ps.partitions.length, 1);
assert.ok(Number(ps.throttledRequests) >= 3, 'throttledRequests ' + ps.throttledRequests);
assert.ok(Number(ps.partitions[0].throttledRequests) >= 3, 'partition throttledRequests ' + ps.partitions[0].throttledRequests);

d.dropDatabase();
print(name + ': ok');
