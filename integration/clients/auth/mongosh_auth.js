// mongosh scenario: users and access control. The server of this scenario
// runs with access control on and a root user (`parsec serve --root-user
// root`), and the shell starts authenticated as root against admin
// (PARSEC_URI carries the credentials).
const assert = require('assert');

const name = 'mongosh_auth';
const d = db.getSiblingDB(name);
d.dropDatabase();
d.dropAllUsers();

// uriAs is the server's URI with other credentials.
function uriAs(user, pwd, source) {
  const u = new URL(process.env.PARSEC_URI);
  u.username = user;
  u.password = pwd;
  u.pathname = '/' + source;
  return u.toString();
}

// as connects as user and returns its handle on this scenario's database.
function as(user, pwd) {
  return new Mongo(uriAs(user, pwd, name)).getDB(name);
}

// same compares shell values by their JSON (shell documents are not plain
// objects).
function same(got, want, what) {
  assert.strictEqual(JSON.stringify(got), JSON.stringify(want), what);
}

function assertCode(fn, code, what) {
  let err = null;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, what + ': no error');
  assert.strictEqual(err.code, code, what + ': ' + err.message);
  return err;
}

// Users, as a mongosh user manages them.
d.createUser({ user: 'clerk', pwd: 'clerk-pw', roles: ['readWrite'], customData: { team: 'shop' } });
d.createUser({ user: 'viewer', pwd: 'viewer-pw', roles: [{ role: 'read', db: name }] });
assertCode(() => d.createUser({ user: 'clerk', pwd: 'x', roles: [] }), 51003, 'duplicate user');
assertCode(() => d.createUser({ user: 'x', pwd: 'x', roles: ['nosuchrole'] }), 31, 'unknown role');
const clerkInfo = d.getUser('clerk');
assert.strictEqual(clerkInfo._id, name + '.clerk');
same(clerkInfo.customData, { team: 'shop' });
same(clerkInfo.mechanisms, ['SCRAM-SHA-1', 'SCRAM-SHA-256']);
assert.strictEqual(d.getUsers().users.length, 2);

// Each user does what its roles allow.
const clerk = as('clerk', 'clerk-pw');
clerk.items.insertMany([{ _id: 1, sku: 'tea' }, { _id: 2, sku: 'cup' }]);
clerk.items.createIndex({ sku: 1 });
const viewer = as('viewer', 'viewer-pw');
assert.strictEqual(viewer.items.countDocuments({}), 2);
const denied = assertCode(() => viewer.items.insertOne({ _id: 3 }), 13, 'viewer insert');
assert.match(denied.message, /not authorized on mongosh_auth to execute command \{ insert: "items"/);
assertCode(() => clerk.dropDatabase(), 13, 'clerk dropDatabase');
assertCode(() => clerk.getSiblingDB('admin').runCommand({ serverStatus: 1 }), 13, 'clerk serverStatus');
same(viewer.getMongo().getDBNames(), [name]);

// A wrong password fails as MongoDB's does.
assertCode(() => as('viewer', 'wrong').items.findOne(), 18, 'wrong password');

// Role and password changes.
d.grantRolesToUser('viewer', ['readWrite']);
viewer.items.insertOne({ _id: 3 });
d.revokeRolesFromUser('viewer', ['readWrite']);
assertCode(() => viewer.items.insertOne({ _id: 4 }), 13, 'viewer insert after revoke');
d.changeUserPassword('clerk', 'new-pw');
assertCode(() => as('clerk', 'clerk-pw').items.findOne(), 18, 'old password');
assert.strictEqual(as('clerk', 'new-pw').items.countDocuments({}), 3);

// db.auth switches the shell's user.
const shop = db.getSiblingDB(name);
assert.ok(shop.auth('viewer', 'viewer-pw').ok);
const status = shop.runCommand({ connectionStatus: 1 }).authInfo;
same(status.authenticatedUsers, [{ user: 'viewer', db: name }]);
assertCode(() => shop.dropUser('clerk'), 13, 'viewer dropUser');
assert.ok(db.getSiblingDB('admin').auth('root', new URL(process.env.PARSEC_URI).password).ok);
d.dropUser('clerk');
assert.strictEqual(d.getUsers().users.length, 1);
d.dropAllUsers();
d.dropDatabase();
print(name + ': ok');
