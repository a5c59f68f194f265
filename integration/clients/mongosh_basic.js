// mongosh scenario: what a user types in the shell on day one.
const assert = require('assert');

const t = db.getSiblingDB('mongosh_basic');
t.dropDatabase();

assert.strictEqual(db.runCommand({ ping: 1 }).ok, 1);
assert.strictEqual(db.version(), '7.0.0');

const one = t.people.insertOne({ _id: 1, name: 'Ada', langs: ['en', 'fr'] });
assert.strictEqual(one.insertedId, 1);
const many = t.people.insertMany([{ name: 'Bob', langs: ['en'] }, { name: 'Cy', langs: [] }]);
assert.strictEqual(Object.keys(many.insertedIds).length, 2);

assert.strictEqual(t.people.findOne({ _id: 1 }).name, 'Ada');
assert.strictEqual(t.people.find({ langs: 'en' }).toArray().length, 2);
assert.strictEqual(t.people.find().batchSize(1).toArray().length, 3);

let dup = null;
try { t.people.insertOne({ _id: 1 }); } catch (e) { dup = e; }
assert.ok(dup, 'duplicate _id must fail');
assert.strictEqual(dup.code, 11000);

assert.strictEqual(JSON.stringify(t.getCollectionNames()), '["people"]');
const dbs = db.adminCommand({ listDatabases: 1 }).databases.map(d => d.name);
assert.ok(dbs.includes('mongosh_basic'), 'listDatabases shows the database: ' + dbs);
assert.strictEqual(Number(t.stats().objects), 3);

assert.strictEqual(t.people.deleteOne({ _id: 1 }).deletedCount, 1);
assert.strictEqual(t.people.deleteMany({}).deletedCount, 2);

let unknown = null;
try { db.runCommand({ noSuchCommand: 1 }); } catch (e) { unknown = e; }
assert.ok(unknown && unknown.code === 59 && /noSuchCommand/.test(unknown.message), 'unknown command: ' + unknown);

assert.strictEqual(t.people.drop(), true);
print('mongosh_basic: ok');
