// mongosh scenario: what the shell asks the server about itself (hello,
// buildInfo, serverStatus, hostInfo, getParameter, getCmdLineOpts, getLog,
// connectionStatus, listCommands) and sessions.
const assert = require('assert');

// Topology: mongosh sees a mongos (the prompt reads "[direct: mongos]").
const hello = db.hello();
assert.strictEqual(hello.isWritablePrimary, true);
assert.strictEqual(hello.msg, 'isdbgrid');
assert.strictEqual(hello.maxWireVersion, 21);
assert.strictEqual(hello.maxBsonObjectSize, 16 * 1024 * 1024);
assert.strictEqual(hello.maxWriteBatchSize, 100000);
assert.strictEqual(hello.logicalSessionTimeoutMinutes, 30);
assert.strictEqual(db.isMaster().ismaster, true);
assert.strictEqual(db.getMongo().getReadPrefMode(), 'primary');

// Version and build.
assert.strictEqual(db.version(), '7.0.0');
const bi = db.serverBuildInfo();
assert.strictEqual(bi.version, '7.0.0');
assert.deepStrictEqual(Array.from(bi.versionArray).slice(0, 3), [7, 0, 0]);
assert.strictEqual(bi.bits, 64);
assert.strictEqual(bi.maxBsonObjectSize, 16 * 1024 * 1024);
const fcv = db.adminCommand({ getParameter: 1, featureCompatibilityVersion: 1 });
assert.strictEqual(fcv.featureCompatibilityVersion.version, '7.0');

// serverStatus as the shell's db.serverStatus() returns it.
const ss = db.serverStatus();
assert.strictEqual(ss.process, 'mongos');
assert.strictEqual(ss.version, '7.0.0');
assert.ok(ss.uptime >= 0 && ss.localTime instanceof Date, 'uptime and localTime');
assert.ok(Number(ss.connections.current) >= 1, 'connections.current: ' + ss.connections.current);
for (const op of ['insert', 'query', 'update', 'delete', 'getmore', 'command']) {
  assert.ok(ss.opcounters[op] !== undefined, 'opcounters.' + op);
}
const cmdsBefore = Number(ss.opcounters.command);
db.runCommand({ ping: 1 });
assert.ok(Number(db.serverStatus().opcounters.command) > cmdsBefore, 'opcounters.command grows');

// hostInfo, getCmdLineOpts, getLog, connectionStatus, whatsmyuri, listCommands.
const hi = db.hostInfo();
assert.ok(hi.system.hostname && hi.os.type && hi.system.numCores >= 1, JSON.stringify(hi.system));
const opts = db.serverCmdLineOpts();
assert.ok(/parsec$/.test(opts.argv[0]), 'argv[0]: ' + opts.argv[0]);
assert.ok(opts.parsed.listen, 'parsed.listen');
const logs = db.adminCommand({ getLog: '*' });
assert.ok(logs.names.includes('startupWarnings'));
const warnings = db.adminCommand({ getLog: 'startupWarnings' });
for (const line of warnings.log) {
  // Structured (JSON) log lines: what mongosh parses for its banner.
  const entry = JSON.parse(line);
  assert.ok(entry.t.$date && entry.msg, line);
}
assert.deepStrictEqual(Array.from(db.adminCommand({ connectionStatus: 1 }).authInfo.authenticatedUsers), []);
assert.ok(/^127\.0\.0\.1:\d+$/.test(db.adminCommand({ whatsmyuri: 1 }).you));
const lc = db.adminCommand({ listCommands: 1 }).commands;
for (const cmd of ['find', 'insert', 'update', 'delete', 'findAndModify', 'count', 'distinct', 'explain', 'hello']) {
  assert.ok(lc[cmd], 'listCommands has ' + cmd);
}

// Sessions: writes and reads through a session, then its end; explicit
// lsid on a command; endSessions.
const session = db.getMongo().startSession();
const sdb = session.getDatabase('mongosh_server');
sdb.dropDatabase();
sdb.s.insertOne({ _id: 1 });
sdb.s.updateOne({ _id: 1 }, { $set: { v: 1 } });
assert.strictEqual(sdb.s.findOne({ _id: 1 }).v, 1);
const cur = sdb.s.find().batchSize(1);
assert.strictEqual(cur.toArray().length, 1);
assert.ok(session.id && session.id.id, 'session id');
session.endSession();
const lsid = { id: UUID() };
assert.strictEqual(db.getSiblingDB('mongosh_server').runCommand({ find: 's', filter: {}, lsid }).ok, 1);
assert.strictEqual(db.adminCommand({ endSessions: [lsid] }).ok, 1);

// A write with a transaction number (what retryable writes send). The
// driver sends runCommand with an lsid of its own session pool, not ours:
// it may be the server session the writes above used up to txnNumber 2,
// so the number must be newer than any the driver has sent.
const w = { insert: 's', documents: [{ _id: 2 }], lsid, txnNumber: NumberLong('1000000') };
assert.strictEqual(db.getSiblingDB('mongosh_server').runCommand(w).n, 1);
assert.strictEqual(db.getSiblingDB('mongosh_server').s.find({ _id: 2 }).itcount(), 1);

db.getSiblingDB('mongosh_server').dropDatabase();
print('mongosh_server: ok');
