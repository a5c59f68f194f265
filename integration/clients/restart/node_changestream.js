// Node.js driver scenario for change streams across a server restart
// (run by TestNodeChangeStreamRestart, which restarts the server when
// this script prints RESTART and answers on stdin when it is back):
// `for await` over a collection's stream, the server killed and started
// again on the same data, the driver resuming the stream by itself with
// the last resume token it saw, then a new stream opened with
// resumeAfter that token.
const assert = require('assert');
const readline = require('readline');
const { MongoClient } = require('mongodb');

const lines = readline.createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once('line', resolve));

async function main() {
  const client = new MongoClient(process.env.PARSEC_URI, { retryWrites: true, serverSelectionTimeoutMS: 30000 });
  await client.connect();
  try {
    const coll = client.db('node_changestream').collection('orders');
    await coll.drop().catch(() => {});
    await coll.insertOne({ _id: 0, warmup: true });
    const stream = coll.watch([{ $match: { operationType: 'insert' } }]);
    const it = stream[Symbol.asyncIterator]();
    let lastToken = null;
    const take = async (n) => {
      const ids = [];
      while (ids.length < n) {
        const { value, done } = await it.next();
        assert.ok(!done, 'the stream ended');
        assert.strictEqual(value.operationType, 'insert');
        ids.push(value.fullDocument._id);
        lastToken = value._id;
      }
      return ids;
    };
    // The stream is open once its first getMore runs: start reading
    // before writing, then write.
    const first = take(3);
    await new Promise((r) => setTimeout(r, 200));
    await coll.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }]);
    assert.deepStrictEqual(JSON.stringify(await first), '[1,2,3]');

    // The server goes down and comes back on the same data; the writes
    // after it reach the same stream, which the driver resumes with its
    // last token: nothing lost, nothing twice.
    console.log('RESTART');
    assert.strictEqual(await nextLine(), 'BACK');
    const more = take(3);
    for (const id of [4, 5, 6]) {
      await coll.insertOne({ _id: id });
    }
    assert.strictEqual(JSON.stringify(await more), '[4,5,6]');
    await stream.close();

    // A new stream that resumes after the last token sees what came
    // after it, and only that.
    await coll.insertOne({ _id: 7 });
    const resumed = coll.watch([], { resumeAfter: lastToken });
    for await (const ev of resumed) {
      assert.strictEqual(ev.operationType, 'insert');
      assert.strictEqual(ev.fullDocument._id, 7);
      break;
    }
    await resumed.close();
  } finally {
    await client.close();
    lines.close();
  }
  console.log('node_changestream: ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
