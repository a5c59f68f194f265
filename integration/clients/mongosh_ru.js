// mongosh scenario: request units as Cosmos DB reports them. After each
// command, getLastRequestStatistics names it and gives its charge (a
// point read of a small item 1 RU, an insert of one about 5.5 RU), and
// GetPartitionStats adds the charges up per partition. The server of
// TestClients has rate limiting off, so nothing here is refused.
//
// getLastRequestStatistics is about the connection's previous command: a
// script runs one command at a time and the driver's pool hands back the
// connection used last, so it follows the command it reports on.
const assert = require('assert');

const name = 'mongosh_ru';
const d = db.getSiblingDB(name);
d.dropDatabase();
const c = d.items;

const guid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
let lastActivity = null;
let charged = 0; // what the commands on items cost, as reported

// stats checks what getLastRequestStatistics says of the command just run.
function stats(label, command, lo, hi) {
  const s = d.runCommand({ getLastRequestStatistics: 1 });
  const got = label + ': ' + JSON.stringify(s);
  assert.strictEqual(s.ok, 1, got);
  assert.strictEqual(s._t, 'GetRequestStatisticsResponse', got);
  assert.strictEqual(s.CommandName, command, got);
  assert.strictEqual(typeof s.RequestCharge, 'number', got);
  assert.ok(s.RequestCharge >= lo && s.RequestCharge <= hi, `${got}: want RequestCharge in [${lo}, ${hi}]`);
  assert.ok(guid.test(s.ActivityId), got);
  assert.notStrictEqual(s.ActivityId, lastActivity, label + ': the ActivityId of the previous command');
  const ms = Number(s.RequestDurationInMilliSeconds);
  assert.ok(ms >= 0 && ms < 20000, got);
  lastActivity = s.ActivityId;
  charged += s.RequestCharge;
  return s;
}

assert.strictEqual(d.createCollection('items').ok, 1);
stats('createCollection', 'create', 0, 10);
charged = 0;

// Writes: an insert of a small item is about 5.5 RU (5 for the write,
// the _id index entry), n items cost n times as much.
c.insertOne({ _id: 1, item: 'tea', qty: 3 });
const insert = stats('insertOne', 'insert', 5, 6);
// Asking again reports the same command, not getLastRequestStatistics.
const again = d.runCommand({ getLastRequestStatistics: 1 });
assert.strictEqual(again.CommandName, 'insert');
assert.strictEqual(again.ActivityId, insert.ActivityId);
assert.strictEqual(again.RequestCharge, insert.RequestCharge);
c.insertMany([{ _id: 2, item: 'coffee', qty: 1 }, { _id: 3, item: 'cocoa', qty: 2 }, { _id: 4, item: 'mate', qty: 5 }]);
stats('insertMany of 3', 'insert', 3 * 5, 3 * 6);

// Reads: a point read by _id is 1 RU, found or not; a query more.
assert.strictEqual(c.findOne({ _id: 1 }).item, 'tea');
stats('findOne by _id', 'find', 1, 1);
assert.strictEqual(c.findOne({ _id: 404 }), null);
stats('findOne of a missing item', 'find', 1, 1);
assert.strictEqual(c.find({ qty: { $gt: 1 } }).toArray().length, 3);
stats('query', 'find', 1.5, 20);
assert.strictEqual(c.countDocuments({}), 4);
stats('countDocuments', 'aggregate', 1, 20);
assert.strictEqual(c.aggregate([{ $group: { _id: null, n: { $sum: '$qty' } } }]).toArray()[0].n, 11);
stats('aggregate', 'aggregate', 1, 20);
assert.strictEqual(c.distinct('item').length, 4);
stats('distinct', 'distinct', 1, 20);

// Updates replace the item: about twice an insert; a delete about one.
assert.strictEqual(c.updateOne({ _id: 1 }, { $inc: { qty: 1 } }).modifiedCount, 1);
stats('updateOne', 'update', 10, 12);
assert.strictEqual(c.deleteOne({ _id: 4 }).deletedCount, 1);
stats('deleteOne', 'delete', 5, 6);

// A secondary index makes writes dearer by its entries.
c.createIndex({ qty: 1 });
stats('createIndex', 'createIndexes', 0, 10);
charged -= d.runCommand({ getLastRequestStatistics: 1 }).RequestCharge;
c.insertOne({ _id: 5, item: 'chai', qty: 9 });
const indexed = stats('insertOne with an index', 'insert', 5, 7);
assert.ok(indexed.RequestCharge > insert.RequestCharge, `with an index ${indexed.RequestCharge} RU, without ${insert.RequestCharge} RU`);

// Commands that touch no collection are charged too.
d.runCommand({ ping: 1 });
stats('ping', 'ping', 0, 2);
charged -= d.runCommand({ getLastRequestStatistics: 1 }).RequestCharge;

// A failed command is reported as well.
let dup = null;
try { c.insertOne({ _id: 1 }); } catch (e) { dup = e; }
assert.ok(dup && dup.code === 11000, 'duplicate: ' + dup);
stats('duplicate insert', 'insert', 0, 6);

// GetPartitionStats adds up what the commands on items cost (catalog
// commands and ping, subtracted above, are not charged to a partition).
const ps = d.runCommand({ customAction: 'GetPartitionStats', collection: 'items' });
assert.strictEqual(ps.provisionedThroughput, 400);
assert.strictEqual(ps.rateLimiting, false);
assert.strictEqual(Number(ps.throttledRequests), 0);
assert.strictEqual(ps.partitions.length, 1);
assert.ok(Math.abs(ps.ruTotal - charged) < 0.5, `ruTotal ${ps.ruTotal}, the commands reported ${charged.toFixed(2)}`);
assert.ok(Number(ps.requestCount) >= 10, 'requestCount ' + ps.requestCount);

d.dropDatabase();
print(name + ': ok');
