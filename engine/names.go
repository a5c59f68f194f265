package engine

import "strings"

// maxNamespaceBytes is MongoDB's limit on "db.collection".
const maxNamespaceBytes = 255

// validateDBName applies MongoDB's database name rules.
func validateDBName(db string) error {
	if db == "" {
		return errorf(ErrInvalidNamespace, "Invalid empty database name")
	}
	// MongoDB refuses these two when it makes the name, before any other
	// rule.
	if strings.Contains(db, ".") {
		return errorf(ErrInvalidNamespace, "'.' is an invalid character in a db name: %s", db)
	}
	if strings.Contains(db, "\x00") {
		return errorf(ErrInvalidNamespace, "database names cannot have embedded null characters")
	}
	if len(db) >= 64 {
		return errorf(ErrInvalidNamespace, "Invalid database name: '%s': name is longer than 63 bytes", db)
	}
	if strings.ContainsAny(db, "/\\. \"$\x00") {
		return errorf(ErrInvalidNamespace, "Invalid database name: '%s'", db)
	}
	return nil
}

// validateCollName applies MongoDB's collection name rules for a
// collection a user creates or writes to.
func validateCollName(db, coll string) error {
	if err := validateDBName(db); err != nil {
		return err
	}
	switch {
	case coll == "":
		return errorf(ErrInvalidNamespace, "Invalid namespace specified '%s.'", db)
	case strings.ContainsAny(coll, "$\x00"), strings.HasPrefix(coll, "."):
		return errorf(ErrInvalidNamespace, "Invalid collection name: %s", coll)
	case len(db)+1+len(coll) > maxNamespaceBytes:
		return errorf(ErrInvalidNamespace, "Fully qualified namespace is too long. Namespace: %s.%s Max: %d", db, coll, maxNamespaceBytes)
	case strings.HasPrefix(coll, "system.") && !allowedSystemCollection(coll):
		return errorf(ErrInvalidNamespace, "Invalid system namespace: %s.%s", db, coll)
	}
	return nil
}

func allowedSystemCollection(coll string) bool {
	switch coll {
	case "system.js", "system.views", "system.profile":
		return true
	}
	return false
}

// validCollectionArg is collectionArg checked by MongoDB's naming rules
// (validateCollName): the collection a command names.
func validCollectionArg(req *request) (string, error) {
	name, err := collectionArg(req)
	if err != nil {
		return "", err
	}
	return name, validateCollName(req.db, name)
}

// collectionArg reads the collection name that is the first field's value.
func collectionArg(req *request) (string, error) {
	v := req.body.Index(0).Value()
	name, ok := v.StringValueOK()
	if !ok {
		return "", errorf(ErrInvalidNamespace, "collection name has invalid type %s", TypeName(v.Type))
	}
	return name, nil
}
