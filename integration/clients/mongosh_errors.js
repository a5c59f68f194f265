// mongosh scenario: errors read as MongoDB's do in the shell: the error
// class mongosh shows, the code and codeName, and the message text.
const assert = require('assert');

const name = 'mongosh_errors';
const d = db.getSiblingDB(name);
d.dropDatabase();
const c = d.c;
c.insertOne({ _id: 1, a: [1, 2], s: 'x' });
c.insertOne({ _id: 2 });

// fails runs f and checks the error it throws.
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

// Duplicate keys: the E11000 text drivers and people grep for, with the
// key pattern and value.
const dup = fails('insertOne duplicate', () => c.insertOne({ _id: 1 }), {
  name: 'MongoServerError', code: 11000,
  message: /^E11000 duplicate key error collection: mongosh_errors\.c index: _id_ dup key: \{ _id: 1 \}$/,
});
assert.strictEqual(JSON.stringify(dup.keyPattern), '{"_id":1}');
assert.strictEqual(JSON.stringify(dup.keyValue), '{"_id":1}');
const bulk = fails('insertMany duplicate', () => c.insertMany([{ _id: 3 }, { _id: 1 }, { _id: 4 }]), {
  name: 'MongoBulkWriteError', code: 11000, message: /E11000 duplicate key error collection: mongosh_errors\.c index: _id_ dup key: \{ _id: 1 \}/,
});
assert.strictEqual(bulk.writeErrors[0].index, 1);
assert.strictEqual(bulk.result.insertedCount, 1, 'ordered insert stops at the error');
assert.strictEqual(c.updateOne({ _id: 2 }, { $set: { x: 1 } }).modifiedCount, 1);
fails('upsert of a duplicate _id', () => c.updateOne({ _id: 1, s: 'no' }, { $set: { s: 'yes' } }, { upsert: true }), {
  code: 11000, message: /E11000 duplicate key error/,
});

// Query language errors.
fails('unknown operator', () => c.find({ a: { $foo: 1 } }).toArray(), { name: 'MongoServerError', code: 2, codeName: 'BadValue', message: /^unknown operator: \$foo$/ });
fails('unknown top-level operator', () => c.find({ $foo: 1 }).toArray(), { code: 2, codeName: 'BadValue', message: /^unknown top level operator: \$foo/ });
fails('bad regex', () => c.find({ s: { $regex: '(' } }).toArray(), { code: 51091, message: /Regular expression is invalid/ });
fails('bad expression', () => c.find({ $expr: { $nope: 1 } }).toArray(), { code: 168, codeName: 'InvalidPipelineOperator', message: /Unrecognized expression '\$nope'/ });
fails('mixed projection', () => c.find({}, { a: 1, s: 0 }).toArray(), { code: 31254, message: /Cannot do exclusion on field s in inclusion projection/ });
fails('maxTimeMS out of range', () => d.runCommand({ find: 'c', maxTimeMS: -1 }), { code: 51024, codeName: 'Location51024', message: /BSON field 'maxTimeMS' value must be >= 0, actual value '-1'/ });
fails('unknown cursor', () => d.runCommand({ getMore: NumberLong('12345'), collection: 'c' }), { code: 43, codeName: 'CursorNotFound', message: /cursor id 12345 not found/ });

// Update language errors.
fails('unknown modifier', () => c.updateOne({ _id: 1 }, { $bogus: { a: 1 } }), { code: 9, message: /^Unknown modifier: \$bogus/ });
fails('$inc on a string', () => c.updateOne({ _id: 1 }, { $inc: { s: 1 } }), { code: 14, message: /Cannot apply \$inc to a value of non-numeric type/ });
fails('conflicting paths', () => c.updateOne({ _id: 1 }, { $set: { a: 1 }, $inc: { a: 1 } }), { code: 40, message: /would create a conflict at 'a'/ });
fails('$push to a non-array', () => c.updateOne({ _id: 1 }, { $push: { s: 1 } }), { code: 2, message: /must be an array but is of type string/ });
fails('replace changes _id', () => c.replaceOne({ _id: 1 }, { _id: 9 }), { code: 66, message: /\(immutable\) field '_id'/ });

// Commands and namespaces.
fails('unknown command', () => d.runCommand({ frobnicate: 1 }), { name: 'MongoServerError', code: 59, codeName: 'CommandNotFound', message: /^no such command: 'frobnicate'$/ });
fails('rename a missing collection', () => d.nope.renameCollection('x'), { code: 26, codeName: 'NamespaceNotFound', message: /mongosh_errors\.nope does not exist/ });
fails('admin-only command elsewhere', () => d.runCommand({ getLog: 'global' }), { code: 13, codeName: 'Unauthorized' });

// What Parsec does not do says so.
fails('$where', () => c.find({ $where: 'true' }).toArray(), { code: 238, codeName: 'NotImplemented', message: /\$where is not supported by Parsec/ });
fails('$text without index', () => c.find({ $text: { $search: 'x' } }).toArray(), { code: 27, codeName: 'IndexNotFound' });
fails('$near without index', () => c.find({ loc: { $near: [0, 0] } }).toArray(), { code: 291, message: /unable to find index for \$geoNear query/ });
fails('bad collation locale', () => c.find({}).collation({ locale: 'fr_fr' }).toArray(), { code: 2, codeName: 'BadValue', message: /Did you mean 'fr_FR'\?/ });

// Multi-document transactions: the session's reads see its own writes,
// other connections see nothing until commitTransaction, abortTransaction
// leaves nothing; a command MongoDB refuses in a transaction gets 263.
const txn = db.getMongo().startSession();
const tc = txn.getDatabase(name).c;
txn.startTransaction();
tc.insertOne({ _id: 'txn', n: 1 });
tc.updateOne({ _id: 'txn' }, { $inc: { n: 1 } });
assert.strictEqual(tc.findOne({ _id: 'txn' }).n, 2, 'a transaction reads its own writes');
assert.strictEqual(c.countDocuments({ _id: 'txn' }), 0, 'a write in a transaction is seen before commit');
txn.commitTransaction();
assert.strictEqual(c.findOne({ _id: 'txn' }).n, 2, 'a committed write is missing');
txn.startTransaction();
tc.deleteOne({ _id: 'txn' });
tc.insertOne({ _id: 'txn-aborted' });
fails('count in a transaction', () => txn.getDatabase(name).runCommand({ count: 'c' }), { name: 'MongoServerError', code: 263, codeName: 'OperationNotSupportedInTransaction', message: /^Cannot run 'count' in a multi-document transaction/ });
fails('a duplicate key in a transaction', () => tc.insertOne({ _id: 1 }), {});
fails('a statement after the failed one', () => tc.findOne({ _id: 1 }), { code: 251, codeName: 'NoSuchTransaction' });
txn.abortTransaction();
// A collection the transaction creates is not listed before commit, and
// an abort takes it back. A write with w: 2, which one member cannot
// meet, is applied and answered with a write concern error.
txn.startTransaction();
txn.getDatabase(name).createCollection('made_in_txn');
txn.getDatabase(name).made_in_txn.insertOne({ _id: 1 });
assert(!d.getCollectionNames().includes('made_in_txn'), 'a collection created in an open transaction is listed');
txn.abortTransaction();
assert(!d.getCollectionNames().includes('made_in_txn'), 'an aborted transaction left its collection');
txn.endSession();
fails('w: 2 on one member', () => c.insertOne({ _id: 'w2' }, { writeConcern: { w: 2 } }), { name: 'MongoWriteConcernError', code: 100, codeName: 'UnsatisfiableWriteConcern' });
assert.strictEqual(c.countDocuments({ _id: 'w2' }), 1, 'a write with an unmet write concern was not applied');
c.deleteOne({ _id: 'w2' });
assert.strictEqual(c.countDocuments({ _id: 'txn' }), 1, 'an aborted delete was applied');
assert.strictEqual(c.countDocuments({ _id: 'txn-aborted' }), 0, 'an aborted insert was applied');
c.deleteOne({ _id: 'txn' });

// The shell prints server errors as "MongoServerError[codeName]: message".
const shown = fails('printed form', () => c.find({ a: { $foo: 1 } }).toArray(), {});
assert.strictEqual(`${shown.name}[${shown.codeName}]: ${shown.message}`, 'MongoServerError[BadValue]: unknown operator: $foo');

// A failed operation changes nothing.
assert.strictEqual(JSON.stringify(c.find().sort({ _id: 1 }).toArray()), '[{"_id":1,"a":[1,2],"s":"x"},{"_id":2,"x":1},{"_id":3}]');
d.dropDatabase();
print(name + ': ok');
