// mongosh scenario: secondary indexes as a shell user types them —
// createIndex, getIndexes, a unique violation, explain, hide, drop.
const assert = require('assert');
const eq = (got, want, msg) => assert.strictEqual(JSON.stringify(got), JSON.stringify(want), msg);

// fails runs f and checks the error it throws (assert.throws does not
// wait for the shell's asynchronous calls).
function fails(label, f, want) {
  let err = null;
  try { f(); } catch (e) { err = e; }
  assert.ok(err, label + ': no error');
  const got = `${err.name} ${err.code} ${err.codeName} ${err.message}`;
  if (want.name) assert.strictEqual(err.name, want.name, label + ': ' + got);
  if (want.code !== undefined) assert.strictEqual(err.code, want.code, label + ': ' + got);
  if (want.codeName) assert.strictEqual(err.codeName, want.codeName, label + ': ' + got);
  if (want.message) assert.ok(want.message.test(err.message), label + ': ' + got);
  return err;
}

const d = db.getSiblingDB('mongosh_indexes');
d.dropDatabase();
const c = d.people;
c.insertMany([
  { _id: 1, name: 'ada', email: 'ada@x', age: 36, langs: ['en', 'fr'] },
  { _id: 2, name: 'bob', email: 'bob@x', age: 25, langs: ['en'] },
  { _id: 3, name: 'cy', email: 'cy@x', age: 41, langs: [] },
]);

// createIndex returns the index name; createIndexes the names.
assert.strictEqual(c.createIndex({ email: 1 }, { unique: true }), 'email_1');
eq(c.createIndexes([{ age: -1 }, { langs: 1, name: 1 }]), ['age_-1', 'langs_1_name_1']);
assert.strictEqual(c.createIndex({ name: 1 }, { name: 'by_name', partialFilterExpression: { age: { $gt: 30 } } }), 'by_name');

// getIndexes: _id first, then in creation order, with their options.
const ix = c.getIndexes();
eq(ix.map((i) => i.name), ['_id_', 'email_1', 'age_-1', 'langs_1_name_1', 'by_name']);
eq(ix[1].key, { email: 1 });
assert.strictEqual(ix[1].unique, true);
assert.strictEqual(ix[1].v, 2);
eq(ix[4].partialFilterExpression, { age: { $gt: 30 } });
eq(c.getIndexKeys(), [{ _id: 1 }, { email: 1 }, { age: -1 }, { langs: 1, name: 1 }, { name: 1 }]);

// A duplicate in a unique index reads as in MongoDB.
fails('case 1', () => c.insertOne({ _id: 4, email: 'ada@x' }), {
  name: 'MongoServerError', code: 11000,
  message: /^E11000 duplicate key error collection: mongosh_indexes\.people index: email_1 dup key: \{ email: "ada@x" \}$/,
});
fails('case 2', () => c.updateOne({ _id: 2 }, { $set: { email: 'cy@x' } }), { code: 11000 });

// explain: the index serves equality, ranges and sorts.
const plan = (x) => {
  const w = x.queryPlanner.winningPlan;
  return w.shards ? w.shards[0].winningPlan : w;
};
const ixscan = (p) => (p.stage === 'IXSCAN' ? p : p.inputStage && ixscan(p.inputStage));
let x = c.find({ email: 'bob@x' }).explain('executionStats');
assert.strictEqual(ixscan(plan(x)).indexName, 'email_1');
assert.strictEqual(Number(x.executionStats.totalKeysExamined), 1);
x = c.find({ age: { $gte: 30 } }).sort({ age: -1 }).explain();
const p = plan(x);
assert.notStrictEqual(p.stage, 'SORT', 'the index gives the order: ' + JSON.stringify(p));
assert.strictEqual(ixscan(p).indexName, 'age_-1');
eq(c.find({ age: { $gte: 30 } }, { _id: 1 }).sort({ age: -1 }).toArray(), [{ _id: 3 }, { _id: 1 }]);
eq(c.find({ langs: 'fr' }, { _id: 1 }).toArray(), [{ _id: 1 }]);
assert.strictEqual(ixscan(plan(c.find({ langs: 'fr' }).explain())).isMultiKey, true);

// hint, hidden indexes, dropIndex.
eq(c.find({ age: 25 }, { _id: 1 }).hint('age_-1').toArray(), [{ _id: 2 }]);
assert.strictEqual(d.runCommand({ collMod: 'people', index: { name: 'age_-1', hidden: true } }).hidden_new, true);
assert.strictEqual(plan(c.find({ age: 25 }).explain()).stage, 'COLLSCAN');
fails('case 3', () => c.find({ age: 25 }).hint('age_-1').toArray(), { code: 2 });
c.unhideIndex('age_-1');
assert.strictEqual(ixscan(plan(c.find({ age: 25 }).explain())).indexName, 'age_-1');
assert.strictEqual(c.dropIndex('by_name').ok, 1);
assert.strictEqual(c.dropIndex({ age: -1 }).ok, 1);
fails('case 4', () => c.dropIndex('_id_'), { code: 72 });
assert.strictEqual(c.dropIndexes().ok, 1);
eq(c.getIndexes().map((i) => i.name), ['_id_']);

// Unsupported kinds say so.
fails('case 5', () => c.createIndex({ bio: 'text' }), { code: 67, codeName: 'CannotCreateIndex' });

// stats count the indexes.
c.createIndex({ name: 1 });
const st = c.stats();
assert.strictEqual(st.nindexes, 2);
assert.ok(st.indexSizes.name_1 > 0, JSON.stringify(st.indexSizes));
assert.strictEqual(d.runCommand({ validate: 'people' }).valid, true);
print('mongosh_indexes: ok');
