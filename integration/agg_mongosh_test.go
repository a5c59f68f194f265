package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// aggMongoshScript uses the mongosh helpers built on aggregate:
// countDocuments, aggregate and its explain, and sh.status(), which reads
// the config database through aggregate (chunk counts per shard, active
// mongoses).
const aggMongoshScript = `
const assert = require('assert');
use('agg_mongosh');
db.dropDatabase();
db.c.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i, k: i % 5, v: i })));
assert.strictEqual(db.c.countDocuments({ k: 2 }), 10);
assert.strictEqual(db.c.countDocuments(), 50);
assert.strictEqual(db.c.countDocuments({}, { skip: 45 }), 5);
const sums = db.c.aggregate([{ $group: { _id: '$k', s: { $sum: '$v' } } }, { $sort: { _id: 1 } }]).toArray();
assert.strictEqual(JSON.stringify(sums.map(d => d.s)), '[225,235,245,255,265]');
const ex = db.c.explain().aggregate([{ $match: { k: 1 } }, { $count: 'n' }]);
assert.strictEqual(ex.splitPipeline.shardsPart.length, 2);
db.getSiblingDB('agg_mongosh').runCommand({ customAction: 'CreateCollection', collection: 'sharded', shardKey: 'k', offerThroughput: 24000 });
db.sharded.insertMany(Array.from({ length: 40 }, (_, i) => ({ _id: i, k: 'key' + i })));
assert.strictEqual(db.sharded.countDocuments({ k: 'key7' }), 1);
const status = sh.status();
const text = JSON.stringify(status);
assert.ok(text.includes('"nChunks":4'), 'sh.status() counts the 4 chunks: ' + text);
assert.ok(text.includes('agg_mongosh.sharded'), text);
print('agg_mongosh: ok');
`

// TestAggregateMongosh runs the aggregate-based mongosh helpers against a
// server.
func TestAggregateMongosh(t *testing.T) {
	t.Parallel()
	requireMongosh(t)
	s := startTestServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "agg_mongosh.js")
	if err := os.WriteFile(file, []byte(aggMongoshScript), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mongoshBin, s.URI()+"test", "--quiet", "--norc", "--file", file)
	cmd.Env = clientEnv(s.URI(), dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "agg_mongosh: ok") {
		t.Fatalf("mongosh: %v\n%s", err, out)
	}
}
