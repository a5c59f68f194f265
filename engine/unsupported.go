package engine

// unsupportedCommands are MongoDB commands Parsec knows and does not
// serve, each with the reason and what to do instead. They answer 115
// CommandNotSupported, as Parsec's other refusals do, rather than 59
// CommandNotFound, which would suggest a typing mistake. Commands MongoDB
// itself has removed (eval, group, geoSearch, ...) stay unknown: 59 is
// what MongoDB 7.0 answers for them.
var unsupportedCommands = map[string]string{
	"mapReduce":                mapReduceWhy,
	"mapreduce":                mapReduceWhy,
	"compact":                  "the store compacts its tables in the background",
	"reIndex":                  "indexes are kept in step with every write; drop and create an index to rebuild it",
	"cloneCollectionAsCapped":  "copy into a capped collection made by create {capped: true, size} instead",
	"setParameter":             "server parameters are set when the server starts (parsec serve --help)",
	"setDefaultRWConcern":      "the default read and write concerns are fixed (getDefaultRWConcern shows them)",
	"shutdown":                 "stop the server with SIGINT or SIGTERM, which finishes requests in flight",
	"top":                      "per-collection time counters are not kept; GetPartitionStats reports request units per partition",
	"dataSize":                 "use collStats, or GetPartitionStats for each physical partition's bytes",
	"refineCollectionShardKey": "a collection's shard key is fixed, as in Cosmos DB: copy the data into a new collection",
	"split":                    "physical partitions split on their own, by throughput and size; there are no chunks",
	"moveChunk":                "physical partitions split on their own, by throughput and size; there are no chunks",
	"moveRange":                "physical partitions split on their own, by throughput and size; there are no chunks",
	"mergeChunks":              "physical partitions split on their own, by throughput and size; there are no chunks",
	"filemd5":                  "compute the checksum on the client (the drivers' GridFS no longer asks for it)",
}

const mapReduceWhy = "server-side JavaScript is not available; an aggregation pipeline ($group, then $out or $merge) computes the same"

// unsupportedCommand is the refusal of a known command Parsec does not
// serve, or nil for a name it does not know.
func unsupportedCommand(name string) *CommandError {
	why, ok := unsupportedCommands[name]
	if !ok {
		return nil
	}
	return errorf(ErrCommandNotSupported, "%s is not supported by Parsec: %s", name, why)
}
