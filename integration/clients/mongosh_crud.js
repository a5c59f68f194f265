// mongosh scenario: writes, reads, counts and explain, the shell helpers a
// user reaches for (insert*, find and cursor methods, update*, replaceOne,
// findOneAnd*, delete*, bulkWrite, the legacy bulk API, distinct,
// estimatedDocumentCount, explain).
const assert = require('assert');
const eq = (got, want, msg) => assert.strictEqual(JSON.stringify(got), JSON.stringify(want), msg);

const name = 'mongosh_crud';
use(name);
db.dropDatabase();
const c = db.orders;

// insertOne / insertMany
const one = c.insertOne({ _id: 1, item: 'tea', qty: 5, price: NumberDecimal('2.50'), tags: ['hot', 'leaf'], at: ISODate('2024-01-02T03:04:05Z') });
assert.strictEqual(one.acknowledged, true);
assert.strictEqual(one.insertedId, 1);
const auto = c.insertOne({ item: 'water', qty: 0 });
assert.ok(auto.insertedId instanceof ObjectId, 'generated _id is an ObjectId');
const many = c.insertMany(Array.from({ length: 120 }, (_, i) => ({ _id: 100 + i, item: 'item' + (i % 10), qty: i, tags: i % 2 ? ['odd'] : ['even', 'x'] })));
assert.strictEqual(Object.keys(many.insertedIds).length, 120);
assert.strictEqual(many.insertedIds[0], 100);

// Types round-trip.
const tea = c.findOne({ _id: 1 });
assert.strictEqual(tea.price.toString(), '2.50');
assert.strictEqual(tea.at.toISOString(), '2024-01-02T03:04:05.000Z');
eq(tea.tags, ['hot', 'leaf']);
const big = c.insertOne({ _id: 2, n: NumberLong('9007199254740993'), i: NumberInt(7), b: BinData(0, 'AQID'), u: UUID('0123456789abcdef0123456789abcdef'), re: /ab+c/i, ts: Timestamp({ t: 1, i: 2 }), min: MinKey(), max: MaxKey(), nul: null, nested: { a: [{ b: 1 }] } });
const two = c.findOne({ _id: big.insertedId });
assert.strictEqual(two.n.toString(), '9007199254740993');
assert.strictEqual(two.i, 7);
assert.strictEqual(two.b.toString('base64'), 'AQID');
assert.strictEqual(two.u.toString('hex'), '0123456789abcdef0123456789abcdef');
assert.strictEqual(two.re.source, 'ab+c');
assert.strictEqual(two.ts.getHighBits(), 1);
assert.strictEqual(two.nested.a[0].b, 1);
assert.strictEqual(c.deleteOne({ _id: 2 }).deletedCount, 1);

// find: filter, projection, sort, skip, limit, batchSize and cursor methods.
assert.strictEqual(c.find({ qty: { $gte: 100 } }).toArray().length, 20);
const page = c.find({ tags: 'odd' }, { _id: 0, qty: 1 }).sort({ qty: -1 }).skip(2).limit(3).toArray();
eq(page, [{ qty: 115 }, { qty: 113 }, { qty: 111 }]);
const cur = c.find({}).sort({ _id: 1 }).batchSize(7);
let seen = 0;
while (cur.hasNext()) { cur.next(); seen++; }
assert.strictEqual(seen, 122, 'cursor over several batches');
assert.strictEqual(c.find({ item: 'item3' }).itcount(), 12);
eq(c.find({ _id: { $in: [100, 101] } }, { item: 1 }).sort({ _id: 1 }).map((d) => d.item).toArray(), ['item0', 'item1']);
let sum = 0;
c.find({ item: 'item9' }).forEach((d) => { sum += d.qty; });
assert.strictEqual(sum, 9 + 19 + 29 + 39 + 49 + 59 + 69 + 79 + 89 + 99 + 109 + 119);
assert.strictEqual(c.findOne({ qty: { $gt: 1000 } }), null);
eq(c.find({ _id: 1 }, { tags: { $slice: 1 } }).next().tags, ['hot']);
eq(c.find({ _id: 1 }, { tags: { $elemMatch: { $eq: 'leaf' } }, _id: 0 }).toArray(), [{ tags: ['leaf'] }]);
eq(c.find({ _id: 100 }, { _id: 0, double: { $multiply: ['$qty', 2] }, label: { $concat: ['$item', '!'] } }).toArray(), [{ double: 0, label: 'item0!' }]);
assert.strictEqual(c.find({ item: /^ITEM1$/i }).itcount(), 12);
assert.strictEqual(c.find({ $expr: { $gt: ['$qty', { $multiply: [10, 11] }] } }).itcount(), 9);
assert.strictEqual(c.find({ tags: { $all: ['even', 'x'] }, qty: { $mod: [4, 0] } }).itcount(), 30);
assert.strictEqual(c.find({ tags: { $size: 1 }, qty: { $type: 'number' } }).itcount(), 60);
assert.strictEqual(c.find({ nope: { $exists: true } }).itcount(), 0);
assert.strictEqual(c.find({ $or: [{ _id: 1 }, { qty: 119 }], at: { $not: { $type: 'date' } } }).itcount(), 1);
assert.strictEqual(c.find({ $jsonSchema: { required: ['price'] } }).itcount(), 1);
eq(c.find({ _id: { $type: 'number' } }, { _id: 1 }).sort({ _id: -1 }).limit(1).toArray(), [{ _id: 219 }]);
assert.strictEqual(c.find({}).hint({ _id: 1 }).limit(2).itcount(), 2);
assert.strictEqual(c.find({}).maxTimeMS(10000).itcount(), 122);

// Counting.
assert.strictEqual(c.estimatedDocumentCount(), 122);
assert.strictEqual(db.runCommand({ count: 'orders', query: { tags: 'odd' } }).n, 60);
eq(c.distinct('item', { qty: { $lt: 3 } }).sort(), ['item0', 'item1', 'item2', 'water']);
eq(c.distinct('tags').sort(), ['even', 'hot', 'leaf', 'odd', 'x']);

// explain
const plan = c.find({ qty: { $gt: 50 } }).explain('executionStats');
assert.ok(plan.queryPlanner, 'explain has queryPlanner');
assert.strictEqual(Number(plan.executionStats.nReturned), 69); // Parsec sends a Long where MongoDB sends an int (reported)
assert.ok(plan.executionStats.totalDocsExamined >= 69, 'docs examined');
const plan2 = c.explain('queryPlanner').find({ _id: 1 }).finish();
assert.ok(plan2.queryPlanner, 'explain().find() has queryPlanner');
const countPlan = c.explain().count({ qty: 3 });
assert.ok(countPlan.queryPlanner, 'explain count');

// updateOne / updateMany / replaceOne, upserts, update operators.
let r = c.updateOne({ _id: 1 }, { $set: { qty: 6 }, $push: { tags: { $each: ['new'], $sort: 1 } }, $currentDate: { seen: true } });
assert.strictEqual(r.matchedCount, 1);
assert.strictEqual(r.modifiedCount, 1);
const t1 = c.findOne({ _id: 1 });
eq(t1.tags, ['hot', 'leaf', 'new']);
assert.ok(t1.seen instanceof Date);
r = c.updateMany({ tags: 'odd' }, { $inc: { qty: 1000 }, $unset: { item: '' } });
assert.strictEqual(r.matchedCount, 60);
assert.strictEqual(r.modifiedCount, 60);
assert.strictEqual(c.find({ qty: { $gte: 1000 }, item: { $exists: false } }).itcount(), 60);
r = c.updateOne({ _id: 'new' }, { $setOnInsert: { made: true }, $set: { qty: 1 } }, { upsert: true });
assert.strictEqual(r.upsertedCount, 1);
assert.strictEqual(r.insertedId, 'new'); // mongosh names the upserted _id insertedId
assert.strictEqual(c.findOne({ _id: 'new' }).made, true);
r = c.updateOne({ _id: 100 }, { $set: { 'tags.$[t]': 'EVEN' } }, { arrayFilters: [{ t: 'even' }] });
eq(c.findOne({ _id: 100 }).tags, ['EVEN', 'x']);
r = c.updateOne({ _id: 102, tags: 'x' }, { $set: { 'tags.$': 'X' } });
eq(c.findOne({ _id: 102 }).tags, ['even', 'X']);
r = c.updateMany({ _id: { $in: [104, 106] } }, [{ $set: { total: { $add: ['$qty', 1] } } }]);
assert.strictEqual(r.modifiedCount, 2);
assert.strictEqual(c.findOne({ _id: 104 }).total, 5);
r = c.replaceOne({ _id: 'new' }, { replaced: true });
assert.strictEqual(r.modifiedCount, 1);
eq(c.findOne({ _id: 'new' }), { _id: 'new', replaced: true });
r = c.replaceOne({ _id: 'other' }, { replaced: 'upsert' }, { upsert: true });
assert.strictEqual(r.insertedId, 'other');

// findOneAndUpdate / findOneAndReplace / findOneAndDelete
let doc = c.findOneAndUpdate({ _id: 1 }, { $inc: { qty: 1 } }, { returnDocument: 'after', projection: { qty: 1 } });
eq(doc, { _id: 1, qty: 7 });
doc = c.findOneAndUpdate({ _id: 'absent' }, { $set: { v: 1 } }, { upsert: true, returnNewDocument: true });
eq(doc, { _id: 'absent', v: 1 });
doc = c.findOneAndReplace({ _id: 'absent' }, { v: 2 }, { returnDocument: 'before' });
eq(doc, { _id: 'absent', v: 1 });
doc = c.findOneAndDelete({ _id: 'absent' });
eq(doc, { _id: 'absent', v: 2 });
assert.strictEqual(c.findOneAndDelete({ _id: 'absent' }), null);
doc = c.findOneAndUpdate({ qty: { $lt: 1000 } }, { $set: { first: true } }, { sort: { qty: -1 } });
assert.strictEqual(doc._id, 218);

// bulkWrite and the legacy bulk API.
const bw = c.bulkWrite([
  { insertOne: { document: { _id: 'b1', qty: 1 } } },
  { insertOne: { document: { _id: 'b2', qty: 2 } } },
  { updateOne: { filter: { _id: 'b1' }, update: { $set: { qty: 10 } } } },
  { updateMany: { filter: { _id: { $in: ['b1', 'b2'] } }, update: { $set: { bulk: true } } } },
  { replaceOne: { filter: { _id: 'b3' }, replacement: { qty: 3 }, upsert: true } },
  { deleteOne: { filter: { _id: 'b2' } } },
  { deleteMany: { filter: { _id: { $in: ['b3', 'nothing'] } } } },
]);
assert.strictEqual(bw.insertedCount, 2);
assert.strictEqual(bw.matchedCount, 3);
assert.strictEqual(bw.modifiedCount, 3);
assert.strictEqual(bw.upsertedCount, 1);
assert.strictEqual(bw.deletedCount, 2);
eq(c.findOne({ _id: 'b1' }), { _id: 'b1', qty: 10, bulk: true });
const ordered = c.initializeOrderedBulkOp();
ordered.insert({ _id: 'o1' });
ordered.find({ _id: 'o1' }).updateOne({ $set: { v: 1 } });
ordered.find({ _id: 'o2' }).upsert().replaceOne({ v: 2 });
ordered.find({ _id: 'o1' }).deleteOne();
const or = ordered.execute();
assert.strictEqual(or.insertedCount, 1);
assert.strictEqual(or.upsertedCount, 1);
assert.strictEqual(or.deletedCount, 1);
const unordered = c.initializeUnorderedBulkOp();
unordered.insert({ _id: 'o2' }); // duplicate
unordered.insert({ _id: 'o3' });
let bulkErr = null;
try { unordered.execute(); } catch (e) { bulkErr = e; }
assert.ok(bulkErr, 'unordered bulk with a duplicate fails');
assert.strictEqual(bulkErr.name, 'MongoBulkWriteError');
assert.strictEqual(bulkErr.writeErrors.length, 1);
assert.strictEqual(bulkErr.writeErrors[0].code, 11000);
assert.strictEqual(bulkErr.result.insertedCount, 1, 'unordered goes on past the error');
assert.ok(c.findOne({ _id: 'o3' }), 'o3 inserted');

// Write concern options the shell passes through.
assert.strictEqual(c.insertOne({ _id: 'j' }, { writeConcern: { w: 1, j: true } }).acknowledged, true);
assert.strictEqual(c.insertOne({ _id: 'w0' }, { writeConcern: { w: 0 } }).acknowledged, false);

// deleteOne / deleteMany
assert.strictEqual(c.deleteOne({ _id: 'j' }).deletedCount, 1);
assert.strictEqual(c.deleteMany({ qty: { $gte: 1000 } }).deletedCount, 60);
assert.strictEqual(c.deleteMany({ qty: { $gte: 1000 } }).deletedCount, 0);
assert.ok(c.deleteMany({}).deletedCount > 0);
assert.strictEqual(c.estimatedDocumentCount(), 0);
db.dropDatabase();
print(name + ': ok');
