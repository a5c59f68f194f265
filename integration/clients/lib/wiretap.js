// wiretap: a TCP proxy for the Node.js scenarios that forwards every byte
// unchanged and records what crossed the wire: each message's opcode, the
// compressor of OP_COMPRESSED messages, the command name and the OP_MSG
// sections (kind 1 document sequences with their identifier and document
// count). Used by node_wire.js.
const net = require('net');
const zlib = require('zlib');
const { BSON } = require('mongodb');

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_COMPRESSED = 2012;
const OP_MSG = 2013;
const COMPRESSORS = { 0: 'noop', 1: 'snappy', 2: 'zlib', 3: 'zstd' };

function cstring(buf, at) {
  const end = buf.indexOf(0, at);
  return [buf.toString('utf8', at, end), end + 1];
}

// parse decodes one message body (after the 16-byte header).
function parseBody(opCode, body, rec) {
  if (opCode === OP_MSG) {
    const flags = body.readUInt32LE(0);
    const end = body.length - (flags & 1 ? 4 : 0);
    rec.sections = [];
    for (let at = 4; at < end;) {
      const kind = body[at++];
      if (kind === 0) {
        const len = body.readInt32LE(at);
        const doc = BSON.deserialize(body.subarray(at, at + len), { promoteValues: false });
        rec.sections.push({ kind: 0 });
        rec.body = doc;
        rec.command = Object.keys(doc)[0];
        at += len;
      } else if (kind === 1) {
        const size = body.readInt32LE(at);
        const [id, next] = cstring(body, at + 4);
        let count = 0;
        for (let p = next; p < at + size; p += body.readInt32LE(p)) count++;
        rec.sections.push({ kind: 1, id, count });
        at += size;
      } else {
        throw new Error('unknown OP_MSG section kind ' + kind);
      }
    }
  } else if (opCode === OP_QUERY) {
    const [ns, at] = cstring(body, 4);
    const len = body.readInt32LE(at + 8);
    rec.ns = ns;
    rec.body = BSON.deserialize(body.subarray(at + 8, at + 8 + len), { promoteValues: false });
    rec.command = Object.keys(rec.body)[0];
  } else if (opCode === OP_REPLY) {
    const len = body.readInt32LE(20);
    rec.body = BSON.deserialize(body.subarray(20, 20 + len), { promoteValues: false });
  }
}

async function decompress(compressor, data) {
  switch (compressor) {
    case 'noop': return data;
    case 'zlib': return zlib.inflateSync(data);
    case 'snappy': return require('snappy').uncompress(data, { asBuffer: true });
    case 'zstd': return require('@mongodb-js/zstd').decompress(data);
  }
  throw new Error('unknown compressor ' + compressor);
}

// tap parses the messages of one direction of one connection.
function tap(conn, dir, log, pending) {
  let buf = Buffer.alloc(0);
  return (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 4 && buf.length >= buf.readInt32LE(0)) {
      const len = buf.readInt32LE(0);
      const msg = buf.subarray(0, len);
      buf = buf.subarray(len);
      const rec = { conn, dir, opCode: msg.readInt32LE(12), requestID: msg.readInt32LE(4), responseTo: msg.readInt32LE(8), size: len };
      log.push(rec);
      pending.push((async () => {
        try {
          if (rec.opCode === OP_COMPRESSED) {
            rec.originalOpCode = msg.readInt32LE(16);
            rec.uncompressedSize = msg.readInt32LE(20);
            rec.compressor = COMPRESSORS[msg[24]];
            const body = await decompress(rec.compressor, msg.subarray(25));
            if (body.length !== rec.uncompressedSize) throw new Error(`uncompressed size ${body.length}, header says ${rec.uncompressedSize}`);
            parseBody(rec.originalOpCode, body, rec);
          } else {
            parseBody(rec.opCode, msg.subarray(16), rec);
          }
        } catch (e) {
          rec.error = e;
        }
      })());
    }
  };
}

// start listens on 127.0.0.1:0 and forwards to the server of uri.
async function start(uri) {
  const target = new URL(uri.replace(/^mongodb:/, 'http:'));
  const log = [];
  const pending = [];
  const sockets = new Set();
  let nconn = 0;
  const server = net.createServer((client) => {
    const conn = ++nconn;
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.on('data', tap(conn, 'client', log, pending));
    upstream.on('data', tap(conn, 'server', log, pending));
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream); };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    uri: `mongodb://127.0.0.1:${server.address().port}/`,
    log,
    // settled waits for every message seen so far to be decoded; it throws
    // if one could not be.
    async settled() {
      await Promise.all(pending);
      const bad = log.find((r) => r.error);
      if (bad) throw bad.error;
      return log;
    },
    // reply finds the server's answer to a client message.
    reply(rec) {
      return log.find((r) => r.dir === 'server' && r.conn === rec.conn && r.responseTo === rec.requestID);
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

module.exports = { start, OP_MSG, OP_QUERY, OP_REPLY, OP_COMPRESSED };
