package engine

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The Stable API's parameters, checked as MongoDB 7.0 checks them
// (validate_api_parameters.cpp): apiStrict and apiDeprecationErrors need
// apiVersion; the only version is "1"; with apiStrict: true, a command
// outside API Version 1 is 323 APIStrictError. No command of Version 1
// is deprecated, so apiDeprecationErrors refuses nothing.

// apiVersion1Commands are the commands of Stable API Version 1 in MongoDB
// 7.0 (the Stable API changelog); isMaster is not among them, hello is.
var apiVersion1Commands = map[string]bool{
	"abortTransaction": true, "aggregate": true, "authenticate": true, "collMod": true,
	"commitTransaction": true, "count": true, "create": true, "createIndexes": true,
	"delete": true, "drop": true, "dropDatabase": true, "dropIndexes": true,
	"endSessions": true, "explain": true, "find": true, "findAndModify": true,
	"getMore": true, "hello": true, "insert": true, "killCursors": true,
	"listCollections": true, "listDatabases": true, "listIndexes": true, "ping": true,
	"refreshSessions": true, "saslContinue": true, "saslStart": true, "update": true,
}

// apiParamsContext is the IDL struct MongoDB parses the parameters with,
// which its type errors name.
const apiParamsContext = "APIParametersFromClient"

// checkAPIParams checks a command's apiVersion, apiStrict and
// apiDeprecationErrors.
func checkAPIParams(cmd string, body bsoncore.Document) *CommandError {
	var version string
	var hasVersion, strict, flags bool
	elems, _ := body.Elements()
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		var err error
		switch k {
		case "apiVersion":
			version, err = stringArg(apiParamsContext, k, v)
			hasVersion = true
		case "apiStrict":
			strict, err = boolArg(apiParamsContext, k, v)
			flags = true
		case "apiDeprecationErrors":
			_, err = boolArg(apiParamsContext, k, v)
			flags = true
		}
		if err != nil {
			return toCommandError(err)
		}
	}
	if flags && !hasVersion {
		return errorf(Code(4886600), "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
	}
	if hasVersion && version != "1" {
		return errorf(ErrAPIVersionError, "API version must be \"1\"")
	}
	if strict && !apiVersion1Commands[cmd] {
		return errorf(ErrAPIStrictError, "Provided apiStrict:true, but the command %s is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api.", cmd)
	}
	return nil
}
