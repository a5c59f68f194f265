// mongosh scenario: watching a collection and a database, resuming.
const assert = require('assert');

const t = db.getSiblingDB('mongosh_changestreams');
t.dropDatabase();
t.createCollection('orders');

// tryNext answers null while nothing happened: poll a few times.
function next(cursor) {
  for (let i = 0; i < 20; i++) {
    const ev = cursor.tryNext();
    if (ev) return ev;
  }
  throw new Error('no change event');
}

const cs = t.orders.watch([{ $match: { operationType: { $in: ['insert', 'update'] } } }], { fullDocument: 'updateLookup' });
t.orders.insertOne({ _id: 1, qty: 1 });
t.orders.updateOne({ _id: 1 }, { $inc: { qty: 1 } });
t.orders.deleteOne({ _id: 1 }); // filtered out by the $match

const ins = next(cs);
assert.strictEqual(ins.operationType, 'insert');
assert.strictEqual(ins.fullDocument.qty, 1);
assert.strictEqual(ins.ns.db + '.' + ins.ns.coll, 'mongosh_changestreams.orders');
const upd = next(cs);
assert.strictEqual(upd.operationType, 'update');
assert.strictEqual(JSON.stringify(upd.updateDescription.updatedFields), '{"qty":2}');
const token = cs.getResumeToken();
cs.close();

// Resume after the update: the next insert, not the filtered delete.
t.orders.insertOne({ _id: 2 });
const resumed = t.orders.watch([{ $match: { operationType: 'insert' } }], { resumeAfter: token });
assert.strictEqual(next(resumed).documentKey._id, 2);
resumed.close();

// A database's stream sees its collections.
const whole = t.watch();
t.invoices.insertOne({ _id: 'i1' });
const ev = next(whole);
assert.strictEqual(ev.ns.coll, 'invoices');
whole.close();

let notFirst = null;
try { t.orders.aggregate([{ $match: {} }, { $changeStream: {} }]).toArray(); } catch (e) { notFirst = e; }
assert.ok(notFirst && notFirst.code === 40602, '$changeStream not first: ' + notFirst);

t.dropDatabase();
print('mongosh_changestreams: ok');
