package unified

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// codeNames translates the code names tests assert to codes, for errors
// that carry a code but no codeName (write errors).
var codeNames = map[string]int{
	"ChangeStreamFatalError": 280, "Interrupted": 11601, "NoSuchTransaction": 251,
	"OperationNotSupportedInTransaction": 263, "WriteConflict": 112, "DuplicateKey": 11000,
	"NamespaceNotFound": 26, "NamespaceExists": 48, "IndexNotFound": 27, "CommandNotFound": 59,
	"InvalidOptions": 72, "FailedToParse": 9, "BadValue": 2, "TypeMismatch": 14,
	"UnknownReplWriteConcern": 79, "WriteConcernFailed": 64, "NotWritablePrimary": 10107,
	"ExceededTimeLimit": 50, "MaxTimeMSExpired": 50, "HostUnreachable": 6, "HostNotFound": 7,
	"NetworkTimeout": 89, "ShutdownInProgress": 91, "PrimarySteppedDown": 189,
	"InterruptedAtShutdown": 11600, "InterruptedDueToReplStateChange": 11602,
	"NotPrimaryNoSecondaryOk": 13435, "NotPrimaryOrSecondary": 13436, "SocketException": 9001,
	"DocumentValidationFailure": 121, "ImmutableField": 66, "ShardKeyNotFound": 61,
}

// isServerError reports whether err comes from a server response (as
// opposed to a client-side or network error).
func isServerError(err error) bool {
	if mongo.IsNetworkError(err) {
		return false
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Raw != nil || ce.Code != 0
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		return true
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) {
		return true
	}
	var cbe mongo.ClientBulkWriteException
	if errors.As(err, &cbe) {
		return cbe.WriteError != nil || len(cbe.WriteErrors) > 0 || len(cbe.WriteConcernErrors) > 0
	}
	return false
}

func hasLabel(err error, label string) bool {
	var le mongo.LabeledError
	return errors.As(err, &le) && le.HasErrorLabel(label)
}

// errorCodes are the server codes an expected error's errorCode may match.
func errorCodes(err error) []int {
	var cbe mongo.ClientBulkWriteException
	if errors.As(err, &cbe) {
		// Only the top-level error counts for clientBulkWrite.
		if cbe.WriteError != nil {
			return []int{cbe.WriteError.Code}
		}
		return nil
	}
	return mongo.ErrorCodes(err)
}

// errorCodeNames are the codeNames an error carries.
func errorCodeNames(err error) []string {
	var names []string
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Name != "" {
		names = append(names, ce.Name)
	}
	var we mongo.WriteException
	if errors.As(err, &we) && we.WriteConcernError != nil {
		names = append(names, we.WriteConcernError.Name)
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && bwe.WriteConcernError != nil {
		names = append(names, bwe.WriteConcernError.Name)
	}
	return names
}

// serverResponse is the raw server reply behind an error, if the driver
// keeps it.
func serverResponse(err error) bson.Raw {
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Raw != nil {
		return ce.Raw
	}
	var we mongo.WriteException
	if errors.As(err, &we) && we.Raw != nil {
		return we.Raw
	}
	return nil
}

// checkError evaluates an expectError assertion against an operation's
// outcome.
func (t *testRun) checkError(exp bson.Raw, res opResult) error {
	err := res.err
	a := newArgs("expectError", exp)
	if _, _, e := a.boolean("isError"); e != nil {
		return e
	}
	if want, ok, e := a.boolean("isClientError"); e != nil {
		return e
	} else if ok && want == isServerError(err) {
		if want {
			return fmt.Errorf("want a client error, got a server error: %v", err)
		}
		return fmt.Errorf("want a server error, got a client error: %v", err)
	}
	if want, ok, e := a.boolean("isTimeoutError"); e != nil {
		return e
	} else if ok && want != mongo.IsTimeout(err) {
		return fmt.Errorf("want isTimeoutError=%v, got %v", want, err)
	}
	if s, ok, e := a.str("errorContains"); e != nil {
		return e
	} else if ok && !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(s)) {
		return fmt.Errorf("error %q does not contain %q", err, s)
	}
	if code, ok, e := a.integer("errorCode"); e != nil {
		return e
	} else if ok && !slices.Contains(errorCodes(err), int(code)) {
		return fmt.Errorf("want error code %d, got codes %v: %v", code, errorCodes(err), err)
	}
	if name, ok, e := a.str("errorCodeName"); e != nil {
		return e
	} else if ok {
		found := slices.ContainsFunc(errorCodeNames(err), func(n string) bool { return strings.EqualFold(n, name) })
		if code, known := codeNames[name]; !found && known {
			found = slices.Contains(errorCodes(err), code)
		}
		if !found {
			return fmt.Errorf("want error codeName %s, got %v (codes %v): %v", name, errorCodeNames(err), errorCodes(err), err)
		}
	}
	for _, k := range []string{"errorLabelsContain", "errorLabelsOmit"} {
		labels, ok, e := a.array(k)
		if e != nil {
			return e
		}
		if !ok {
			continue
		}
		for _, l := range labels {
			has := hasLabel(err, l.StringValue())
			if k == "errorLabelsContain" && !has {
				return fmt.Errorf("error lacks label %s: %v", l.StringValue(), err)
			}
			if k == "errorLabelsOmit" && has {
				return fmt.Errorf("error has label %s: %v", l.StringValue(), err)
			}
		}
	}
	if d, ok, e := a.doc("errorResponse"); e != nil {
		return e
	} else if ok {
		resp := serverResponse(err)
		if resp == nil {
			return fmt.Errorf("want a server response, the error has none: %v", err)
		}
		if e := Match(docValue(d), docValue(resp), true, t.entities); e != nil {
			return fmt.Errorf("errorResponse: %w", e)
		}
	}
	if v, ok := a.value("expectResult"); ok {
		if e := Match(v, res.value, true, t.entities); e != nil {
			return fmt.Errorf("error's result: %w", e)
		}
	}
	if d, ok, e := a.doc("writeErrors"); e != nil {
		return e
	} else if ok {
		if e := checkWriteErrors(d, err, t.entities); e != nil {
			return e
		}
	}
	if vals, ok, e := a.array("writeConcernErrors"); e != nil {
		return e
	} else if ok {
		var cbe mongo.ClientBulkWriteException
		if !errors.As(err, &cbe) {
			return fmt.Errorf("want writeConcernErrors, got %T %v", err, err)
		}
		if len(vals) != len(cbe.WriteConcernErrors) {
			return fmt.Errorf("%d write concern errors, want %d", len(cbe.WriteConcernErrors), len(vals))
		}
		for i, v := range vals {
			w := cbe.WriteConcernErrors[i]
			got := mustValue(bson.D{{Key: "code", Value: w.Code}, {Key: "codeName", Value: w.Name}, {Key: "message", Value: w.Message}, {Key: "details", Value: w.Details}})
			if e := Match(v, got, true, t.entities); e != nil {
				return fmt.Errorf("writeConcernErrors.%d: %w", i, e)
			}
		}
	}
	return a.finish()
}

func checkWriteErrors(want bson.Raw, err error, r Resolver) error {
	var cbe mongo.ClientBulkWriteException
	if !errors.As(err, &cbe) {
		return fmt.Errorf("want writeErrors, got %T %v", err, err)
	}
	elems, e := want.Elements()
	if e != nil {
		return e
	}
	if len(elems) != len(cbe.WriteErrors) {
		return fmt.Errorf("%d write errors, want %d", len(cbe.WriteErrors), len(elems))
	}
	for _, el := range elems {
		i, _ := strconv.Atoi(el.Key())
		we, ok := cbe.WriteErrors[i]
		if !ok {
			return fmt.Errorf("no write error at index %d", i)
		}
		got := mustValue(bson.D{{Key: "code", Value: we.Code}, {Key: "message", Value: we.Message}, {Key: "details", Value: we.Details}})
		if e := Match(el.Value(), got, true, r); e != nil {
			return fmt.Errorf("writeErrors.%d: %w", i, e)
		}
	}
	return nil
}

// describeError classifies an unexpected error for failure grouping: the
// server's codeName, with the message when it names the missing feature
// (unknown command or operator, unsupported option), or "client error".
func describeError(err error) string {
	var ce mongo.CommandError
	if errors.As(err, &ce) && (ce.Raw != nil || ce.Code != 0) {
		if featureCodes[ce.Code] {
			return fmt.Sprintf("%s: %s", ce.Name, short(ce.Message))
		}
		return fmt.Sprintf("%s(%d)", ce.Name, ce.Code)
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		if len(we.WriteErrors) > 0 {
			return writeErrorClass(we.WriteErrors[0])
		}
		if we.WriteConcernError != nil {
			return "write concern error " + we.WriteConcernError.Name
		}
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && len(bwe.WriteErrors) > 0 {
		return writeErrorClass(bwe.WriteErrors[0].WriteError)
	}
	if mongo.IsNetworkError(err) {
		return "network error"
	}
	if mongo.IsTimeout(err) {
		return "timeout"
	}
	return "client error: " + short(err.Error())
}

// featureCodes are the codes whose message says what is missing:
// BadValue, CommandNotFound, CommandNotSupported, NotImplemented.
var featureCodes = map[int32]bool{2: true, 59: true, 115: true, 238: true}

func writeErrorClass(we mongo.WriteError) string {
	if featureCodes[int32(we.Code)] {
		return fmt.Sprintf("write error %d: %s", we.Code, short(we.Message))
	}
	return fmt.Sprintf("write error %d", we.Code)
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
