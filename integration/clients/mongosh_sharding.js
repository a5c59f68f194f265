// mongosh scenario: sharding as Cosmos DB's documentation and mongosh's sh.*
// helpers do it: sh.shardCollection, Cosmos customAction commands,
// sh.status() listing one chunk per physical partition, the shard-key
// rules as the shell reports them, the shard-key index in getIndexes(), and
// getShardDistribution() and stats() with the exact figures.
const assert = require('assert');
const eq = (got, want, msg) => assert.strictEqual(JSON.stringify(got), JSON.stringify(want), msg);

const name = 'mongosh_sharding';
const d = db.getSiblingDB(name);
d.dropDatabase();

// sh.* helpers
assert.strictEqual(sh.enableSharding(name).ok, 1);
const sharded = sh.shardCollection(name + '.orders', { customer: 'hashed' });
assert.strictEqual(sharded.collectionsharded, name + '.orders');
assert.strictEqual(sharded._t, 'ShardCollectionResponse');
// A ranged key, and a shard key MongoDB refuses (-1 is not a key kind).
assert.strictEqual(sh.shardCollection(name + '.ranged', { customer: 1 }).collectionsharded, name + '.ranged');
let badKey = null;
try { sh.shardCollection(name + '.bad', { customer: -1 }); } catch (e) { badKey = e; }
assert.ok(badKey && badKey.code === 2, 'shard key {customer: -1}: ' + badKey);

// Cosmos DB's CreateCollection: 12,000 RU/s start 2 physical partitions
assert.strictEqual(d.runCommand({ customAction: 'CreateCollection', collection: 'events', shardKey: 'device.id', offerThroughput: 12000 }).ok, 1);
const info = d.runCommand({ customAction: 'GetCollection', collection: 'events' });
eq(info.shardKeyDefinition, { 'device.id': 'hashed' });
assert.strictEqual(info.provisionedThroughput, 12000);

// documents
const docs = [];
for (let i = 0; i < 500; i++) docs.push({ _id: i, customer: 'c' + (i % 25), total: i });
assert.strictEqual(d.orders.insertMany(docs).insertedIds[499], 499);
assert.strictEqual(d.orders.countDocuments({ customer: 'c7' }), 20);
let missing = null;
try { d.orders.insertOne({ _id: 'x', total: 1 }); } catch (e) { missing = e; }
assert.ok(missing && missing.code === 61, 'insert without the shard key: ' + missing);
let immutable = null;
try { d.orders.updateOne({ _id: 1, customer: 'c1' }, { $set: { customer: 'c2' } }); } catch (e) { immutable = e; }
assert.ok(immutable && immutable.code === 66, 'update of the shard key: ' + immutable);

// explain: one partition for the shard key, all without it
const one = d.orders.find({ customer: 'c3' }).explain().queryPlanner.winningPlan.shards;
assert.strictEqual(one.length, 1);

// sh.status(): the collection with its chunks
const status = sh.status();
const ours = status.value.databases.find((x) => x.database._id === name);
assert.ok(ours, 'sh.status() lists the database: ' + JSON.stringify(status.value.databases.map((x) => x.database._id)));
const orders = ours.collections[name + '.orders'];
eq(orders.shardKey, { customer: 'hashed' });
assert.ok(orders.chunks.length >= 1, 'chunks: ' + JSON.stringify(orders.chunks));
const events = ours.collections[name + '.events'];
assert.strictEqual(events.chunks.length, 2, 'events chunks: ' + JSON.stringify(events.chunks));

// partition statistics
const stats = d.runCommand({ customAction: 'GetPartitionStats', collection: 'orders' });
assert.strictEqual(stats.documentCount, 500);
assert.strictEqual(stats.logicalPartitionCount, 25);
assert.strictEqual(stats.partitions.reduce((n, p) => n + p.documentCount, 0), 500);

// getIndexes() lists the shard-key index MongoDB creates for a hashed
// key; it cannot be dropped while the collection is sharded.
eq(d.orders.getIndexes().map((i) => i.name), ['_id_', 'customer_hashed']);
eq(d.orders.getIndexes()[1].key, { customer: 'hashed' });
let dropErr = null;
try { d.orders.dropIndex('customer_hashed'); } catch (e) { dropErr = e; }
assert.ok(dropErr && dropErr.code === 370 && dropErr.codeName === 'CannotDropShardKeyIndex', 'drop of the shard-key index: ' + dropErr);
assert.strictEqual(d.orders.createIndex({ customer: 'hashed' }), 'customer_hashed');
eq(d.orders.getIndexes().map((i) => i.name), ['_id_', 'customer_hashed']);

// getShardDistribution() and stats() on 7 physical partitions
// (40,000 RU/s) holding 1,000 shard-key values: one shard with all of
// it, one chunk per partition, the exact count.
assert.strictEqual(d.runCommand({ customAction: 'CreateCollection', collection: 'spread', shardKey: 'region', offerThroughput: 40000 }).ok, 1);
const spread = [];
for (let i = 0; i < 5000; i++) spread.push({ _id: i, region: 'r' + (i % 1000), pad: 'x'.repeat(i % 50) });
d.spread.insertMany(spread);
const parts = d.runCommand({ customAction: 'GetPartitionStats', collection: 'spread' });
assert.strictEqual(parts.partitionCount, 7);
const dist = d.spread.getShardDistribution().value;
const shardName = db.adminCommand({ listShards: 1 }).shards[0]._id;
eq(Object.keys(dist), ['Shard ' + shardName + ' at ' + db.adminCommand({ listShards: 1 }).shards[0].host, 'Totals']);
assert.strictEqual(dist.Totals.docs, 5000);
assert.strictEqual(dist.Totals.chunks, 7);
eq(dist.Totals['Shard ' + shardName].slice(0, 2), ['100 % data', '100 % docs in cluster']);
const onShard = Object.values(dist)[0];
assert.strictEqual(onShard.docs, 5000);
assert.strictEqual(onShard.chunks, 7);
const st = d.spread.stats();
assert.strictEqual(st.count, 5000);
assert.strictEqual(st.size, parts.dataBytes);
assert.strictEqual(st.totalIndexSize, parts.indexBytes);
assert.strictEqual(st.sharded, true);
assert.strictEqual(st.nindexes, 2);
eq(Object.keys(st.shards), [shardName]);
assert.ok(st.indexSizes.region_hashed > 0 && st.indexSizes._id_ > 0, JSON.stringify(st.indexSizes));
assert.strictEqual(st.indexSizes.region_hashed + st.indexSizes._id_, st.totalIndexSize);

d.dropDatabase();
print(name + ': ok');
