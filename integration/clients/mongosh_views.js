// mongosh scenario: read-only views, as db.createView makes them and the
// shell's helpers read them.
const assert = require('assert');
// Values from the shell come from another realm: compare them as JSON.
const eq = (got, want, msg) => assert.strictEqual(JSON.stringify(got), JSON.stringify(want), msg);

const name = 'mongosh_views';
use(name);
db.dropDatabase();

db.orders.insertMany([
  { _id: 1, item: 'apple', qty: 5, tags: ['red', 'fruit'] },
  { _id: 2, item: 'pear', qty: 0, tags: ['green', 'fruit'] },
  { _id: 3, item: 'leek', qty: 12, tags: ['green'] },
  { _id: 4, item: 'plum', qty: 7, tags: ['red', 'fruit'] },
]);

// db.createView sends create {viewOn, pipeline}.
assert.strictEqual(db.createView('inStock', 'orders', [{ $match: { qty: { $gt: 0 } } }]).ok, 1);
assert.strictEqual(db.createView('names', 'inStock', [{ $project: { item: 1 } }]).ok, 1);

// show collections, getCollectionInfos
eq(db.getCollectionNames(), ['inStock', 'names', 'orders']);
const info = db.getCollectionInfos({ name: 'inStock' })[0];
eq(info.type, 'view');
eq(info.options, { viewOn: 'orders', pipeline: [{ $match: { qty: { $gt: 0 } } }] });
eq(info.info, { readOnly: true });
eq(db.getCollectionInfos({ type: 'view' }).map((c) => c.name), ['inStock', 'names']);

// Reads: find with the shell's cursor methods, a view on a view, counts,
// distinct, aggregate.
eq(db.inStock.find({}, { _id: 1 }).sort({ qty: -1 }).toArray(), [{ _id: 3 }, { _id: 4 }, { _id: 1 }]);
eq(db.inStock.find().sort({ _id: 1 }).skip(1).limit(1).toArray().map((d) => d.item), ['leek']);
eq(db.names.findOne({ _id: 4 }), { _id: 4, item: 'plum' });
eq(db.names.find().sort({ _id: 1 }).batchSize(1).toArray().map((d) => d._id), [1, 3, 4]);
assert.strictEqual(db.inStock.countDocuments({ tags: 'red' }), 2);
assert.strictEqual(db.inStock.estimatedDocumentCount(), 3);
eq(db.inStock.distinct('tags'), ['fruit', 'green', 'red']);
eq(db.names.aggregate([{ $group: { _id: null, n: { $sum: 1 } } }]).toArray(), [{ _id: null, n: 3 }]);
const plan = db.names.find({ item: 'leek' }).explain();
assert.ok(JSON.stringify(plan).includes(name + '.orders'), 'explain names the collection read: ' + JSON.stringify(plan));

// Read-only.
let err = null;
try { db.inStock.insertOne({ _id: 9 }); } catch (e) { err = e; }
assert.ok(err && err.code === 166 && /is a view, not a collection/.test(err.message), 'insert into a view: ' + err);
err = null;
try { db.inStock.updateOne({ _id: 1 }, { $set: { qty: 1 } }); } catch (e) { err = e; }
assert.ok(err && err.code === 166, 'update of a view: ' + err);
err = null;
try { db.inStock.createIndex({ qty: 1 }); } catch (e) { err = e; }
assert.ok(err && err.codeName === 'CommandNotSupportedOnView', 'index on a view: ' + err);
err = null;
try { db.inStock.renameCollection('other'); } catch (e) { err = e; }
assert.ok(err && err.code === 166, 'rename of a view: ' + err);
assert.strictEqual(db.orders.countDocuments(), 4, 'the refused writes wrote nothing');

// collMod redefines a view; a cycle is refused.
assert.strictEqual(db.runCommand({ collMod: 'inStock', pipeline: [{ $match: { qty: 0 } }] }).ok, 1);
eq(db.names.find().toArray(), [{ _id: 2, item: 'pear' }]);
err = null;
try { db.runCommand({ collMod: 'inStock', viewOn: 'names' }); } catch (e) { err = e; }
assert.ok(err && err.codeName === 'GraphContainsCycle', 'a cycle of views: ' + err);

// drop
assert.strictEqual(db.names.drop(), true);
eq(db.getCollectionNames(), ['inStock', 'orders']);
assert.strictEqual(Number(db.stats().views), 1);

db.dropDatabase();
eq(db.getCollectionNames(), []);
print(name + ': ok');
