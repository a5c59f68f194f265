package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/parsecdb/parsec/engine/query"
	"github.com/parsecdb/parsec/engine/store"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Document validation (MongoDB's collection validators): a collection's
// options may hold a validator (a query filter, $jsonSchema included),
// validationLevel (strict, the default: every insert and update;
// moderate: inserts, and updates of documents that were valid; off) and
// validationAction (error, the default: the write fails with 121
// DocumentValidationFailure and errInfo {failingDocumentId, details};
// warn: the write goes ahead and the server logs the failure). Every
// insert, update, replacement, upsert and findAndModify checks the new
// document before it writes anything, unless the command says
// bypassDocumentValidation: true.

// validation is a collection's document validation, read from its
// options.
type validation struct {
	validator bsoncore.Document // nil: none
	moderate  bool
	off       bool
	warn      bool
	filter    *query.Filter
}

// validators caches compiled validators by their bytes: a catalog entry
// is immutable, and many entries (one per change) share a validator.
type validators struct{ m sync.Map }

var noValidation = &validation{}

// validationOf is c's document validation.
func (e *Engine) validationOf(c *store.Collection) *validation {
	if c == nil || len(c.Options) == 0 {
		return noValidation
	}
	opts := bsoncore.Document(c.Options)
	v, err := opts.LookupErr("validator")
	if err != nil {
		return noValidation
	}
	d, ok := v.DocumentOK()
	if !ok || len(d) <= 5 {
		return noValidation
	}
	if cached, ok := e.validators.m.Load(string(c.Options)); ok {
		return cached.(*validation)
	}
	val := &validation{validator: append(bsoncore.Document(nil), d...)}
	if l, err := opts.LookupErr("validationLevel"); err == nil {
		s, _ := l.StringValueOK()
		val.moderate, val.off = s == "moderate", s == "off"
	}
	if a, err := opts.LookupErr("validationAction"); err == nil {
		s, _ := a.StringValueOK()
		val.warn = s == "warn"
	}
	// $$NOW in a validator reads the time of the write; the filter is
	// compiled once, so $expr sees the epoch: compile per write then.
	if !usesNow(val.validator) {
		val.filter, _ = query.Compile(val.validator)
	}
	e.validators.m.Store(string(c.Options), val)
	return val
}

func usesNow(d bsoncore.Document) bool {
	return strings.Contains(string(d), "$$NOW") || strings.Contains(string(d), "$$CLUSTER_TIME")
}

// passes reports whether doc satisfies the validator.
func (v *validation) passes(e *Engine, doc bsoncore.Document) bool {
	f := v.filter
	if f == nil {
		var err error
		if f, err = query.CompileWith(v.validator, query.Options{Now: e.now()}); err != nil {
			return false
		}
	}
	ok, err := f.MatchErr(doc)
	return ok && err == nil
}

// bypassKey marks a request's context: bypassDocumentValidation.
type bypassKey struct{}

// withValidationBypass returns the context a write command runs in: it
// skips document validation when the command says
// bypassDocumentValidation: true.
func withValidationBypass(ctx context.Context, req *request) context.Context {
	if !bypassesValidation(req) {
		return ctx
	}
	return context.WithValue(ctx, bypassKey{}, true)
}

// bypassesValidation reports whether a command says
// bypassDocumentValidation: true.
func bypassesValidation(req *request) bool {
	v, err := req.body.LookupErr("bypassDocumentValidation")
	return err == nil && truthyArg(v)
}

func validationBypassed(ctx context.Context) bool {
	b, _ := ctx.Value(bypassKey{}).(bool)
	return b
}

func truthyArg(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		n, _ := v.AsFloat64OK()
		return n != 0
	}
	return false
}

// checkDocument checks the new version of a document (old is the
// version it replaces, nil for an insert) against c's validator: nil when
// it may be written, else the DocumentValidationFailure. With
// validationAction warn it logs the failure and returns nil.
func (e *Engine) checkDocument(ctx context.Context, c *store.Collection, old, doc []byte, bypass bool) error {
	v := e.validationOf(c)
	if v.validator == nil || v.off || bypass || validationBypassed(ctx) || v.passes(e, doc) {
		return nil
	}
	if v.moderate && old != nil && !v.passes(e, old) {
		return nil // moderate: a document that was invalid may stay so
	}
	info := e.validationErrInfo(v, doc)
	if v.warn {
		e.logValidationWarning(c, doc, info)
		return nil
	}
	ce := errorf(ErrDocumentValidationFailure, "Document failed validation")
	ce.Extra = bson.D{{Key: "errInfo", Value: info}}
	return ce
}

// validationErrInfo is {failingDocumentId, details}.
func (e *Engine) validationErrInfo(v *validation, doc bsoncore.Document) bson.Raw {
	details := query.Explain(v.validator, doc, query.ExplainOptions{Now: e.now(), ErrorInfo: exprErrorInfo})
	b := bsoncore.NewDocumentBuilder()
	if id, err := doc.LookupErr("_id"); err == nil {
		b.AppendValue("failingDocumentId", id)
	}
	b.AppendDocument("details", details)
	return bson.Raw(b.Build())
}

// exprErrorInfo is how a $expr that failed to evaluate explains itself:
// {code, codeName, errmsg}.
func exprErrorInfo(err error) bsoncore.Document {
	ce := toCommandError(languageError(err))
	return bsoncore.NewDocumentBuilder().
		AppendInt32("code", int32(ce.Code)).
		AppendString("codeName", ce.codeName()).
		AppendString("errmsg", ce.Msg).
		Build()
}

// logValidationWarning is validationAction warn's log line (MongoDB's
// 20294 "Document would fail validation").
func (e *Engine) logValidationWarning(c *store.Collection, doc []byte, info bson.Raw) {
	ext := func(b []byte) json.RawMessage {
		out, err := bson.MarshalExtJSON(bson.Raw(b), false, false)
		if err != nil {
			return json.RawMessage(`{}`)
		}
		return out
	}
	attr := map[string]any{"namespace": c.Namespace(), "document": ext(doc), "errInfo": ext(info)}
	e.logs.add(logLineAttr(e.now(), "W", "STORAGE", 20294, "conn", "Document would fail validation", attr))
	e.logger.Warn("document would fail validation", "ns", c.Namespace(), "errInfo", string(ext(info)))
}

// validationOption checks the validator, validationLevel and
// validationAction fields of create or collMod (cmd names the command)
// for collection db.coll.
func validationOption(cmd, db, coll, k string, v bsoncore.Value) (bsoncore.Value, error) {
	switch k {
	case "validationLevel":
		s, err := stringArg(cmd, k, v)
		if err != nil {
			return v, err
		}
		if s != "off" && s != "strict" && s != "moderate" {
			return v, errorf(ErrBadValue, "Enumeration value '%s' for field '%s.validationLevel' is not a valid value.", s, cmd)
		}
	case "validationAction":
		s, err := stringArg(cmd, k, v)
		if err != nil {
			return v, err
		}
		if s != "error" && s != "warn" {
			return v, errorf(ErrBadValue, "Enumeration value '%s' for field '%s.validationAction' is not a valid value.", s, cmd)
		}
	case "validator":
		d, err := docArg(cmd, k, v)
		if err != nil {
			return v, err
		}
		if err := checkValidator(db, coll, d); err != nil {
			return v, err
		}
	}
	return v, nil
}

// checkValidator refuses a validator MongoDB refuses: on a system
// collection or in an internal database, or using $where, $text,
// $near, $nearSphere, $geoNear, or $function in $expr, or that does not
// compile as a filter.
func checkValidator(db, coll string, d bsoncore.Document) error {
	if len(d) <= 5 {
		return nil
	}
	ns := namespaceOf(db, coll)
	if strings.HasPrefix(coll, "system.") {
		return errorf(ErrInvalidOptions, "Document validators not allowed on system collection %s", ns)
	}
	if db == "admin" || db == "local" || db == "config" {
		return errorf(ErrInvalidOptions, "Document validators are not allowed on collection %s in the %s internal database", ns, db)
	}
	if err := bannedInValidator(d, false); err != nil {
		return err
	}
	if _, err := query.Compile(d); err != nil {
		return queryError(err)
	}
	return nil
}

// bannedInValidator looks for operators a validator may not use; inExpr
// is set inside an aggregation expression.
func bannedInValidator(d bsoncore.Document, inExpr bool) error {
	elems, err := d.Elements()
	if err != nil {
		return nil // the compiler reports it
	}
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch {
		case inExpr && k == "$function":
			return errorf(errFunctionInValidator, "$function cannot be used inside a validator.")
		case inExpr && k == "$_internalJsEmit":
			return errorf(errJsEmitInValidator, "$_internalJsEmit cannot be used inside a validator.")
		case !inExpr && (k == "$where" || k == "$text"):
			return errorf(ErrQueryFeatureNotAllowed, "%s is not allowed in this context", k)
		case !inExpr && (k == "$near" || k == "$nearSphere" || k == "$geoNear"):
			return errorf(ErrQueryFeatureNotAllowed, "$geoNear, $near, and $nearSphere are not allowed in this context")
		}
		sub := inExpr || k == "$expr"
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if err := bannedInValidator(v.Data, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// validationErrorInfo is the errInfo of a DocumentValidationFailure, nil
// for other errors.
func validationErrorInfo(err error) bson.Raw {
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Code != ErrDocumentValidationFailure {
		return nil
	}
	for _, e := range ce.Extra {
		if e.Key == "errInfo" {
			if raw, ok := e.Value.(bson.Raw); ok {
				return raw
			}
		}
	}
	return nil
}
