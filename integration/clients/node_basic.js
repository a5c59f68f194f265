// Node.js driver scenario: connect, write, read, cursor, errors.
const assert = require('assert');
const { MongoClient } = require('mongodb');

async function main() {
  const client = new MongoClient(process.env.PARSEC_URI, { compressors: ['zlib'] });
  await client.connect();
  try {
    const db = client.db('node_basic');
    await db.dropDatabase();
    assert.strictEqual((await db.command({ ping: 1 })).ok, 1);
    const coll = db.collection('items');
    const docs = Array.from({ length: 250 }, (_, i) => ({ _id: i, even: i % 2 === 0, pad: 'x'.repeat(100) }));
    const res = await coll.insertMany(docs);
    assert.strictEqual(res.insertedCount, 250);
    const evens = await coll.find({ even: true }, { batchSize: 10 }).toArray();
    assert.strictEqual(evens.length, 125);
    assert.strictEqual((await coll.findOne({ _id: 7 })).even, false);
    await assert.rejects(coll.insertOne({ _id: 7 }), (e) => e.code === 11000);
    const del = await coll.deleteMany({ even: false });
    assert.strictEqual(del.deletedCount, 125);
    const names = (await db.listCollections().toArray()).map((c) => c.name);
    assert.deepStrictEqual(names, ['items']);
  } finally {
    await client.close();
  }
  console.log('node_basic: ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
