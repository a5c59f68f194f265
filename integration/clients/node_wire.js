// Node.js driver scenario: what the driver puts on the wire, seen through
// a recording proxy (lib/wiretap.js): insertMany, bulkWrite and deleteMany
// as OP_MSG document sequences, and each compressor (snappy, zlib, zstd)
// negotiated in the handshake and then used in both directions.
const assert = require('assert');
const { MongoClient } = require('mongodb');
const wiretap = require('./lib/wiretap');

const COMPRESSORS = ['snappy', 'zlib', 'zstd'];

// sequences lists the document sequences of the client's commands named cmd.
function sequences(log, cmd) {
  return log.filter((r) => r.dir === 'client' && r.command === cmd)
    .flatMap((r) => (r.sections || []).filter((s) => s.kind === 1));
}

async function documentSequences(uri) {
  const tap = await wiretap.start(uri);
  const client = new MongoClient(tap.uri, { directConnection: true });
  try {
    const coll = client.db('node_wire').collection('seq');
    await coll.drop();
    const docs = Array.from({ length: 5000 }, (_, i) => ({ _id: i, v: 'x'.repeat(i % 50) }));
    assert.strictEqual((await coll.insertMany(docs)).insertedCount, 5000);
    const res = await coll.bulkWrite([
      { insertOne: { document: { _id: 'a' } } },
      { updateOne: { filter: { _id: 'a' }, update: { $set: { n: 1 } } } },
      { updateMany: { filter: { _id: { $lt: 10 } }, update: { $inc: { n: 1 } } } },
      { deleteOne: { filter: { _id: 0 } } },
      { deleteMany: { filter: { _id: { $gte: 4000 } } } },
    ], { ordered: true });
    assert.strictEqual(res.insertedCount, 1);
    assert.strictEqual(res.modifiedCount, 11);
    assert.strictEqual(res.deletedCount, 1001);
    assert.strictEqual(await coll.estimatedDocumentCount(), 4000);

    const log = await tap.settled();
    const inserts = sequences(log, 'insert');
    assert.ok(inserts.length >= 2 && inserts.every((s) => s.id === 'documents'), 'insert sends a documents sequence: ' + JSON.stringify(inserts));
    assert.strictEqual(inserts.reduce((n, s) => n + s.count, 0), 5001, 'every inserted document went in a sequence');
    const updates = sequences(log, 'update');
    assert.deepStrictEqual(updates.map((s) => [s.id, s.count]), [['updates', 2]]);
    const deletes = sequences(log, 'delete');
    assert.deepStrictEqual(deletes.map((s) => [s.id, s.count]), [['deletes', 2]]);
    // The server answers each of them once, with OP_MSG.
    for (const rec of log.filter((r) => r.dir === 'client' && ['insert', 'update', 'delete'].includes(r.command))) {
      const reply = tap.reply(rec);
      assert.ok(reply && reply.opCode === wiretap.OP_MSG && reply.body.ok == 1, 'reply to ' + rec.command);
    }
    await coll.drop();
  } finally {
    await client.close();
    await tap.close();
  }
}

async function compression(uri, compressor) {
  const tap = await wiretap.start(uri);
  const client = new MongoClient(tap.uri, { directConnection: true, compressors: [compressor] });
  try {
    const coll = client.db('node_wire').collection('z_' + compressor);
    await coll.drop();
    const docs = Array.from({ length: 2000 }, (_, i) => ({ _id: i, text: 'compress me '.repeat(20), i }));
    await coll.insertMany(docs);
    const back = await coll.find({}, { batchSize: 500 }).sort({ _id: 1 }).toArray();
    assert.strictEqual(back.length, 2000);
    assert.deepStrictEqual(back[1999], docs[1999]);
    await coll.updateMany({ i: { $lt: 10 } }, { $set: { z: compressor } });
    assert.strictEqual((await coll.findOne({ i: 3 })).z, compressor);

    const log = await tap.settled();
    // Handshake: the client offers the compressor, the server accepts it.
    const hellos = log.filter((r) => r.dir === 'client' && /^(hello|ismaster|isMaster)$/.test(r.command || ''));
    assert.ok(hellos.length >= 1, 'a handshake');
    for (const h of hellos) {
      assert.deepStrictEqual(Array.from(h.body.compression || []), [compressor], 'client offers ' + compressor);
      const reply = tap.reply(h);
      assert.deepStrictEqual(Array.from(reply.body.compression || []), [compressor], 'server accepts ' + compressor + ': ' + JSON.stringify(reply.body));
    }
    // Then commands travel compressed both ways with that compressor.
    const byDir = (dir) => log.filter((r) => r.dir === dir && r.opCode === wiretap.OP_COMPRESSED);
    const sent = byDir('client');
    const received = byDir('server');
    assert.ok(sent.length >= 5 && received.length >= 5, `compressed messages: ${sent.length} sent, ${received.length} received`);
    for (const r of [...sent, ...received]) {
      assert.strictEqual(r.compressor, compressor);
      assert.strictEqual(r.originalOpCode, wiretap.OP_MSG);
    }
    const commands = new Set(sent.map((r) => r.command));
    for (const c of ['insert', 'find', 'getMore', 'update']) assert.ok(commands.has(c), `${c} sent compressed (${[...commands]})`);
    // Compressed insert still carries its document sequence.
    assert.ok(sent.some((r) => r.command === 'insert' && r.sections.some((s) => s.kind === 1 && s.id === 'documents')), 'compressed document sequence');
    // And compression paid: the big replies are smaller on the wire.
    const getMore = received.find((r) => r.body && r.body.cursor && r.body.cursor.nextBatch && r.body.cursor.nextBatch.length === 500);
    assert.ok(getMore && getMore.size * 3 < getMore.uncompressedSize, `compressed reply ${getMore && getMore.size} of ${getMore && getMore.uncompressedSize} bytes`);
    // Nothing the server sent after the handshake was uncompressed, but
    // the handshake replies themselves.
    const plain = log.filter((r) => r.dir === 'server' && r.opCode !== wiretap.OP_COMPRESSED && !hellos.some((h) => h.requestID === r.responseTo && h.conn === r.conn));
    assert.deepStrictEqual(plain.map((r) => r.opCode), [], 'uncompressed server messages');
    await coll.drop();
  } finally {
    await client.close();
    await tap.close();
  }
}

async function main() {
  const uri = process.env.PARSEC_URI;
  await documentSequences(uri);
  for (const c of COMPRESSORS) {
    await compression(uri, c);
  }
  console.log('node_wire: ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
