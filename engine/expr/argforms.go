package expr

import (
	"errors"

	"github.com/parsecdb/parsec/engine/langerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The checks of an operator's object argument ({input: ..., as: ...})
// that MongoDB makes each with its own assertion: the argument is not an
// object, has a field the operator does not know, or lacks one it
// requires. Operators that MongoDB words alike share a category.
var (
	ErrTrimNotObject = errors.New("$trim argument is not an object")
	ErrTrimUnknown   = errors.New("$trim argument has an unknown field")
	ErrTrimNoInput   = errors.New("$trim without input")

	ErrRegexNotObject = errors.New("regex operator argument is not an object")
	ErrRegexUnknown   = errors.New("regex operator argument has an unknown field")
	ErrRegexNoInput   = errors.New("regex operator without input")
	ErrRegexNoRegex   = errors.New("regex operator without regex")
	// ErrRegexNullPattern, ErrRegexNullOptions and ErrRegexCompile: a
	// regex operator's pattern or options with a zero byte, or a
	// pattern that does not compile.
	ErrRegexNullPattern = errors.New("regex operator pattern with a null byte")
	ErrRegexNullOptions = errors.New("regex operator options with a null byte")
	ErrRegexCompile     = errors.New("regex operator pattern does not compile")

	ErrMapNotObject = errors.New("$map argument is not an object")
	ErrMapUnknown   = errors.New("$map argument has an unknown field")
	ErrMapNoInput   = errors.New("$map without input")
	ErrMapNoIn      = errors.New("$map without in")

	ErrFilterNotObject = errors.New("$filter argument is not an object")
	ErrFilterUnknown   = errors.New("$filter argument has an unknown field")
	ErrFilterNoInput   = errors.New("$filter without input")
	ErrFilterNoCond    = errors.New("$filter without cond")

	ErrLetNotObject  = errors.New("$let argument is not an object")
	ErrLetUnknown    = errors.New("$let argument has an unknown field")
	ErrLetNoVars     = errors.New("$let without vars")
	ErrLetNoIn       = errors.New("$let without in")
	ErrLetVarsObject = errors.New("$let vars is not an object")
	// ErrVarNameEmpty, ErrVarNameStart and ErrVarNameChar: a variable
	// being bound ($let's vars, $map's and $filter's as, a stage's let)
	// with an empty name, a bad first character or a bad character.
	ErrVarNameEmpty = errors.New("empty variable name")
	ErrVarNameStart = errors.New("variable name starts with a bad character")
	ErrVarNameChar  = errors.New("variable name with a bad character")

	ErrReduceNotObject = errors.New("$reduce argument is not an object")
	ErrReduceUnknown   = errors.New("$reduce argument has an unknown field")
	ErrReduceNoInput   = errors.New("$reduce without input")
	ErrReduceNoInitial = errors.New("$reduce without initialValue")
	ErrReduceNoIn      = errors.New("$reduce without in")

	ErrZipNotObject    = errors.New("$zip argument is not an object")
	ErrZipInputsArray  = errors.New("$zip inputs is not an array")
	ErrZipDefaultArray = errors.New("$zip defaults is not an array")
	ErrZipLongestBool  = errors.New("$zip useLongestLength is not a bool")
	ErrZipUnknown      = errors.New("$zip argument has an unknown field")
	ErrZipNoInputs     = errors.New("$zip without inputs")
	ErrZipDefaults     = errors.New("$zip defaults without useLongestLength")
	ErrZipDefaultsLen  = errors.New("$zip defaults and inputs of different lengths")

	ErrDateToStringNotObject = errors.New("$dateToString argument is not an object")
	ErrDateToStringUnknown   = errors.New("$dateToString argument has an unknown field")
	ErrDateToStringNoDate    = errors.New("$dateToString without date")

	ErrDateFromStringNotObject = errors.New("$dateFromString argument is not an object")
	ErrDateFromStringUnknown   = errors.New("$dateFromString argument has an unknown field")
	ErrDateFromStringNoString  = errors.New("$dateFromString without dateString")

	ErrDateToPartsNotObject = errors.New("$dateToParts argument is not an object")
	ErrDateToPartsUnknown   = errors.New("$dateToParts argument has an unknown field")
	ErrDateToPartsNoDate    = errors.New("$dateToParts without date")

	ErrDateFromPartsNotObject = errors.New("$dateFromParts argument is not an object")
	ErrDateFromPartsUnknown   = errors.New("$dateFromParts argument has an unknown field")

	ErrDateArithNotObject = errors.New("$dateAdd argument is not an object")
	ErrDateArithUnknown   = errors.New("$dateAdd argument has an unknown field")
	ErrDateArithMissing   = errors.New("$dateAdd without startDate, unit or amount")
	ErrDateDiffNotObject  = errors.New("$dateDiff argument is not an object")
	ErrDateDiffUnknown    = errors.New("$dateDiff argument has an unknown field")
	ErrDateDiffNoStart    = errors.New("$dateDiff without startDate")
	ErrDateDiffNoEnd      = errors.New("$dateDiff without endDate")
	ErrDateDiffNoUnit     = errors.New("$dateDiff without unit")
	ErrDateTruncNotObject = errors.New("$dateTrunc argument is not an object")
	ErrDateTruncUnknown   = errors.New("$dateTrunc argument has an unknown field")
	ErrDateTruncNoDate    = errors.New("$dateTrunc without date")
	ErrDateTruncNoUnit    = errors.New("$dateTrunc without unit")

	ErrGetFieldUnknown = errors.New("$getField argument has an unknown field")
	ErrGetFieldNoField = errors.New("$getField without field")
	// ErrGetFieldNonConstant, ErrGetFieldFieldType,
	// ErrSetFieldNonConstant and ErrSetFieldFieldType: $getField's or
	// $setField's field not a constant, or not a string.
	ErrGetFieldNonConstant = errors.New("$getField field is not a constant")
	ErrGetFieldFieldType   = errors.New("$getField field is not a string")
	ErrSetFieldNonConstant = errors.New("$setField field is not a constant")
	ErrSetFieldFieldType   = errors.New("$setField field is not a string")

	ErrSetFieldUnknown     = errors.New("$setField argument has an unknown field")
	ErrSetFieldNoField     = errors.New("$setField without field")
	ErrSetFieldNoValue     = errors.New("$setField without value")
	ErrSetFieldNoInput     = errors.New("$setField without input")
	ErrSetFieldInputObject = errors.New("$setField input is not an object")

	ErrSortArrayUnknown = errors.New("$sortArray argument has an unknown field")
	ErrSortArrayNoInput = errors.New("$sortArray without input")
	ErrSortArrayNoSort  = errors.New("$sortArray without sortBy")

	// ErrRandArguments: $rand given an argument other than {}.
	ErrRandArguments = errors.New("$rand with arguments")

	ErrCondUnknown = errors.New("$cond argument has an unknown field")
	ErrCondNoIf    = errors.New("$cond without if")
	ErrCondNoThen  = errors.New("$cond without then")
	ErrCondNoElse  = errors.New("$cond without else")

	ErrSwitchNotObject     = errors.New("$switch argument is not an object")
	ErrSwitchBranchesArray = errors.New("$switch branches is not an array")
	ErrSwitchBranchObject  = errors.New("$switch branch is not an object")
	ErrSwitchBranchUnknown = errors.New("$switch branch has an unknown field")
	ErrSwitchNoCase        = errors.New("$switch branch without case")
	ErrSwitchNoThen        = errors.New("$switch branch without then")
	ErrSwitchUnknown       = errors.New("$switch argument has an unknown field")
	ErrSwitchNoBranch      = errors.New("$switch without branches")

	ErrReplaceNotObject     = errors.New("$replaceOne argument is not an object")
	ErrReplaceUnknown       = errors.New("$replaceOne argument has an unknown field")
	ErrReplaceNoInput       = errors.New("$replaceOne without input")
	ErrReplaceNoFind        = errors.New("$replaceOne without find")
	ErrReplaceNoReplacement = errors.New("$replaceOne without replacement")

	ErrSetFieldNotObject  = errors.New("$setField argument is not an object")
	ErrSortArrayNotObject = errors.New("$sortArray argument is not an object")
)

// condMissing are $cond's categories for a missing if, then and else.
var condMissing = [3]error{ErrCondNoIf, ErrCondNoThen, ErrCondNoElse}

// argForm is the category and wording of one such error: in format,
// %[1]s is the operator and %[2]s the argument's type or the unknown
// field.
type argForm struct {
	category error
	format   string
}

func (f argForm) err(name, detail string) error {
	return langerr.New(f.category, f.format, name, detail)
}

// objectArgForms are an operator's errors for a malformed object
// argument; a zero form keeps namedArgs' generic FailedToParse.
type objectArgForms struct {
	notObject argForm
	unknown   argForm
	missing   map[string]argForm
}

// objectArgs holds the forms of the operators MongoDB words on its own.
// It is filled once and never changed.
var objectArgs = func() map[string]objectArgForms {
	trim := objectArgForms{
		notObject: argForm{ErrTrimNotObject, "%[1]s only supports an object as an argument, found %[2]s"},
		unknown:   argForm{ErrTrimUnknown, "%[1]s found an unknown argument: %[2]s"},
		missing:   map[string]argForm{"input": {ErrTrimNoInput, "%[1]s requires an 'input' field"}},
	}
	regex := objectArgForms{
		notObject: argForm{ErrRegexNotObject, "%[1]s expects an object of named arguments but found: %[2]s"},
		unknown:   argForm{ErrRegexUnknown, "%[1]s found an unknown argument: %[2]s"},
		missing: map[string]argForm{
			"input": {ErrRegexNoInput, "%[1]s requires 'input' parameter"},
			"regex": {ErrRegexNoRegex, "%[1]s requires 'regex' parameter"},
		},
	}
	dateArith := objectArgForms{
		notObject: argForm{ErrDateArithNotObject, "%[1]s expects an object as its argument"},
		unknown: argForm{ErrDateArithUnknown,
			"Unrecognized argument to %[1]s: %[2]s. Expected arguments are startDate, unit, amount, and optionally timezone."},
		missing: map[string]argForm{
			"startDate": {ErrDateArithMissing, "%[1]s requires startDate, unit, and amount to be present"},
			"unit":      {ErrDateArithMissing, "%[1]s requires startDate, unit, and amount to be present"},
			"amount":    {ErrDateArithMissing, "%[1]s requires startDate, unit, and amount to be present"},
		},
	}
	replace := objectArgForms{
		notObject: argForm{ErrReplaceNotObject, "%[1]s requires an object as an argument, found: %[2]s"},
		unknown:   argForm{ErrReplaceUnknown, "%[1]s found an unknown argument: %[2]s"},
		missing: map[string]argForm{
			"input":       {ErrReplaceNoInput, "%[1]s requires 'input' to be specified"},
			"find":        {ErrReplaceNoFind, "%[1]s requires 'find' to be specified"},
			"replacement": {ErrReplaceNoReplacement, "%[1]s requires 'replacement' to be specified"},
		},
	}
	setField := objectArgForms{
		notObject: argForm{ErrSetFieldNotObject, "%[1]s only supports an object as its argument"},
		unknown:   argForm{ErrSetFieldUnknown, "%[1]s found an unknown argument: %[2]s"},
		missing: map[string]argForm{
			"field": {ErrSetFieldNoField, "%[1]s requires 'field' to be specified"},
			"value": {ErrSetFieldNoValue, "%[1]s requires 'value' to be specified"},
			"input": {ErrSetFieldNoInput, "%[1]s requires 'input' to be specified"},
		},
	}
	return map[string]objectArgForms{
		"$trim": trim, "$ltrim": trim, "$rtrim": trim,
		"$regexMatch": regex, "$regexFind": regex, "$regexFindAll": regex,
		"$map": {
			notObject: argForm{ErrMapNotObject, "%[1]s only supports an object as its argument"},
			unknown:   argForm{ErrMapUnknown, "Unrecognized parameter to %[1]s: %[2]s"},
			missing: map[string]argForm{
				"input": {ErrMapNoInput, "Missing 'input' parameter to %[1]s"},
				"in":    {ErrMapNoIn, "Missing 'in' parameter to %[1]s"},
			},
		},
		"$filter": {
			notObject: argForm{ErrFilterNotObject, "%[1]s only supports an object as its argument"},
			unknown:   argForm{ErrFilterUnknown, "Unrecognized parameter to %[1]s: %[2]s"},
			missing: map[string]argForm{
				"input": {ErrFilterNoInput, "Missing 'input' parameter to %[1]s"},
				"cond":  {ErrFilterNoCond, "Missing 'cond' parameter to %[1]s"},
			},
		},
		"$let": {
			notObject: argForm{ErrLetNotObject, "%[1]s only supports an object as its argument"},
			unknown:   argForm{ErrLetUnknown, "Unrecognized parameter to %[1]s: %[2]s"},
			missing: map[string]argForm{
				"vars": {ErrLetNoVars, "Missing 'vars' parameter to %[1]s"},
				"in":   {ErrLetNoIn, "Missing 'in' parameter to %[1]s"},
			},
		},
		"$reduce": {
			notObject: argForm{ErrReduceNotObject, "%[1]s requires an object as an argument, found: %[2]s"},
			unknown:   argForm{ErrReduceUnknown, "%[1]s found an unknown argument: %[2]s"},
			missing: map[string]argForm{
				"input":        {ErrReduceNoInput, "%[1]s requires 'input' to be specified"},
				"initialValue": {ErrReduceNoInitial, "%[1]s requires 'initialValue' to be specified"},
				"in":           {ErrReduceNoIn, "%[1]s requires 'in' to be specified"},
			},
		},
		"$zip": {
			notObject: argForm{ErrZipNotObject, "%[1]s only supports an object as an argument, found %[2]s"},
			unknown:   argForm{ErrZipUnknown, "%[1]s found an unknown argument: %[2]s"},
			missing:   map[string]argForm{"inputs": {ErrZipNoInputs, "%[1]s requires at least one input array"}},
		},
		"$dateToString": {
			notObject: argForm{ErrDateToStringNotObject, "%[1]s only supports an object as its argument"},
			unknown:   argForm{ErrDateToStringUnknown, "Unrecognized argument to %[1]s: %[2]s"},
			missing:   map[string]argForm{"date": {ErrDateToStringNoDate, "Missing 'date' parameter to %[1]s"}},
		},
		"$dateFromString": {
			notObject: argForm{ErrDateFromStringNotObject, "%[1]s only supports an object as an argument, found: %[2]s"},
			unknown:   argForm{ErrDateFromStringUnknown, "Unrecognized argument to %[1]s: %[2]s"},
			missing:   map[string]argForm{"dateString": {ErrDateFromStringNoString, "Missing 'dateString' parameter to %[1]s"}},
		},
		"$dateToParts": {
			notObject: argForm{ErrDateToPartsNotObject, "%[1]s only supports an object as its argument"},
			unknown:   argForm{ErrDateToPartsUnknown, "Unrecognized argument to %[1]s: %[2]s"},
			missing:   map[string]argForm{"date": {ErrDateToPartsNoDate, "Missing 'date' parameter to %[1]s"}},
		},
		"$dateFromParts": {
			notObject: argForm{ErrDateFromPartsNotObject, "%[1]s only supports an object as its argument"},
			unknown:   argForm{ErrDateFromPartsUnknown, "Unrecognized argument to %[1]s: %[2]s"},
		},
		"$dateAdd": dateArith, "$dateSubtract": dateArith,
		"$dateDiff": {
			notObject: argForm{ErrDateDiffNotObject, "%[1]s only supports an object as its argument"},
			unknown:   argForm{ErrDateDiffUnknown, "Unrecognized argument to %[1]s: %[2]s"},
			missing: map[string]argForm{
				"startDate": {ErrDateDiffNoStart, "Missing 'startDate' parameter to %[1]s"},
				"endDate":   {ErrDateDiffNoEnd, "Missing 'endDate' parameter to %[1]s"},
				"unit":      {ErrDateDiffNoUnit, "Missing 'unit' parameter to %[1]s"},
			},
		},
		"$dateTrunc": {
			notObject: argForm{ErrDateTruncNotObject, "%[1]s only supports an object as its argument"},
			unknown: argForm{ErrDateTruncUnknown,
				"Unrecognized argument to %[1]s: %[2]s. Expected arguments are date, unit, and optionally, binSize, timezone, startOfWeek"},
			missing: map[string]argForm{
				"date": {ErrDateTruncNoDate, "Missing 'date' parameter to %[1]s"},
				"unit": {ErrDateTruncNoUnit, "Missing 'unit' parameter to %[1]s"},
			},
		},
		"$getField": {
			unknown: argForm{ErrGetFieldUnknown, "%[1]s found an unknown argument: %[2]s"},
			missing: map[string]argForm{"field": {ErrGetFieldNoField, "%[1]s requires 'field' to be specified"}},
		},
		"$replaceOne": replace, "$replaceAll": replace,
		"$setField": setField, "$unsetField": setField,
		// $convert keeps FailedToParse, in words of its own.
		"$convert": {notObject: argForm{langerr.ErrFailedToParse, "%[1]s expects an object of named arguments but found: %[2]s"}},
		"$sortArray": {
			notObject: argForm{ErrSortArrayNotObject, "%[1]s requires an object as an argument, found: %[2]s"},
			unknown:   argForm{ErrSortArrayUnknown, "%[1]s found an unknown argument: %[2]s"},
			missing: map[string]argForm{
				"input":  {ErrSortArrayNoInput, "%[1]s requires 'input' to be specified"},
				"sortBy": {ErrSortArrayNoSort, "%[1]s requires 'sortBy' to be specified"},
			},
		},
	}
}()

// notObjectError is the error of operator name given arg, which is not
// an object.
func notObjectError(name string, arg bsoncore.Value) error {
	if f := objectArgs[name].notObject; f.category != nil {
		return f.err(name, TypeName(arg))
	}
	return langerr.FailedToParse("%s expects an object as its argument", name)
}

// unknownArgError is the error of operator name given field, which it
// does not know.
func unknownArgError(name, field string) error {
	if f := objectArgs[name].unknown; f.category != nil {
		return f.err(name, field)
	}
	return langerr.FailedToParse("%s found an unknown argument: %s", name, field)
}

// missingArgError is the error of operator name without field.
func missingArgError(name, field string) error {
	if f, ok := objectArgs[name].missing[field]; ok {
		return f.err(name, "")
	}
	return langerr.FailedToParse("Missing '%s' parameter to %s", field, name)
}
