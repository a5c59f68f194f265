// mongosh scenario: databases and collections, as `show dbs`, `use` and
// `show collections` see them (the shell commands themselves are typed in
// the interactive session of mongosh_interactive_clients_test.go; in a
// script they are db.getMongo().show(...) and use(...)).
const assert = require('assert');
// Values from the shell come from another realm: compare them as JSON.
const eq = (got, want, msg) => assert.strictEqual(JSON.stringify(got), JSON.stringify(want), msg);

const name = 'mongosh_catalog';
const d = db.getSiblingDB(name);
d.dropDatabase();
d.getSiblingDB(name + '_other').dropDatabase();

// use: switches the shell's db.
use(name);
assert.strictEqual(db.getName(), name);

// Implicit creation by the first write, explicit creation.
db.fruit.insertOne({ _id: 'apple' });
assert.strictEqual(db.createCollection('veg').ok, 1);
assert.strictEqual(db.getSiblingDB(name + '_other').createCollection('x').ok, 1);

// show dbs
const dbs = db.getMongo().show('dbs');
assert.strictEqual(dbs.type, 'ShowDatabasesResult');
const listed = dbs.value.map((x) => x.name);
assert.ok(listed.includes(name) && listed.includes(name + '_other'), 'show dbs: ' + JSON.stringify(dbs.value));
for (const x of dbs.value) {
  assert.strictEqual(typeof x.sizeOnDisk, 'number', 'sizeOnDisk of ' + x.name);
}
// Other scenarios create and drop databases on the same server meanwhile:
// compare this scenario's own.
const ld = db.adminCommand({ listDatabases: 1 });
const ldNames = ld.databases.map((x) => x.name);
assert.ok(ld.totalSize >= 0 && ldNames.includes(name) && ldNames.includes(name + '_other'), JSON.stringify(ld));
const namesOnly = db.adminCommand({ listDatabases: 1, nameOnly: true }).databases;
eq(Object.keys(namesOnly[0]), ['name']);
const filtered = db.adminCommand({ listDatabases: 1, filter: { name: name + '_other' } }).databases.map((x) => x.name);
eq(filtered, [name + '_other']);
assert.ok(db.getMongo().getDBNames().includes(name));

// show collections
const colls = db.getMongo().show('collections');
assert.strictEqual(colls.type, 'ShowCollectionsResult');
eq(colls.value.map((c) => c.name).sort(), ['fruit', 'veg']);
eq(db.getCollectionNames(), ['fruit', 'veg']);
const infos = db.getCollectionInfos({ name: 'fruit' });
assert.strictEqual(infos.length, 1);
assert.strictEqual(infos[0].type, 'collection');
assert.strictEqual(infos[0].info.readOnly, false);
assert.ok(infos[0].info.uuid, 'listCollections gives a uuid');
eq(infos[0].idIndex.key, { _id: 1 });
assert.strictEqual(db.fruit.exists().name, 'fruit');
assert.strictEqual(db.nothing.exists(), null);
assert.strictEqual(db.fruit.getFullName(), name + '.fruit');

// rename, drop, dropDatabase
assert.strictEqual(db.veg.renameCollection('vegetables').ok, 1);
eq(db.getCollectionNames(), ['fruit', 'vegetables']);
let renameErr = null;
try { db.fruit.renameCollection('vegetables'); } catch (e) { renameErr = e; }
assert.ok(renameErr && renameErr.code === 48 && renameErr.codeName === 'NamespaceExists', 'rename onto an existing name: ' + renameErr);
assert.strictEqual(db.vegetables.drop(), true);
assert.strictEqual(db.vegetables.drop(), true, 'dropping a missing collection succeeds, as in MongoDB 7.0');

// db.stats()
db.fruit.insertMany([{ _id: 'pear', kg: 1.5 }, { _id: 'plum', kg: 0.25 }]);
const st = db.stats();
assert.strictEqual(st.db, name);
assert.strictEqual(Number(st.collections), 1);
assert.strictEqual(Number(st.objects), 3);
assert.ok(Number(st.dataSize) > 0, 'dataSize: ' + st.dataSize);
const stKB = db.stats(1024);
assert.strictEqual(Number(stKB.scaleFactor), 1024);

// Capped collections: isCapped() reads collStats; the oldest go past max.
db.createCollection('log', { capped: true, size: 4096, max: 2 });
assert.ok(db.log.isCapped(), 'log is not capped');
db.log.insertMany([{ _id: 3 }, { _id: 1 }, { _id: 2 }]);
const kept = JSON.stringify(db.log.find().toArray().map((d) => Number(d._id)));
assert.strictEqual(kept, '[1,2]', 'capped log keeps the newest two in insertion order: ' + kept);

// What Parsec refuses, refused readably.
let badName = null;
try { db.runCommand({ create: 'bad$name' }); } catch (e) { badName = e; }
assert.ok(badName && badName.code === 73 && badName.codeName === 'InvalidNamespace', 'bad collection name: ' + badName);

assert.strictEqual(db.dropDatabase().dropped, name);
assert.ok(!db.getMongo().getDBNames().includes(name));
assert.strictEqual(db.getSiblingDB(name + '_other').dropDatabase().ok, 1);
print(name + ': ok');
