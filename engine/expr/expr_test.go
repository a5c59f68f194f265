package expr

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/parsecdb/parsec/engine/langerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestDataDriven replays testdata/*:
//
//	eval
//	[let <document of variables>]
//	<expression as extended JSON>
//	<document>...            (none: evaluated once against {})
//	----
//	<result> | error (<category>): <message>      (one line per document)
//
// Results are written in a compact shell-like notation that keeps
// numeric types apart: 1 (int32), long(1), 1.0 (double), dec(1),
// date(2020-01-01T00:00:00Z), missing.
//
// Expected outputs are MongoDB 7.0's answers (aggregation expression
// operator docs), not a recording: do not --rewrite without checking.
func TestDataDriven(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "eval" {
				d.Fatalf(t, "unknown directive %q", d.Cmd)
			}
			lines := strings.Split(strings.TrimSpace(d.Input), "\n")
			scope := NewScope()
			var letVals []bsoncore.Value
			if let, ok := strings.CutPrefix(lines[0], "let "); ok {
				for _, f := range Fields(parseValue(t, let)) {
					scope.Declare(f.Key)
					letVals = append(letVals, f.Val)
				}
				lines = lines[1:]
			}
			v := parseValue(t, lines[0])
			e, err := Compile(v, scope)
			if err != nil {
				return fmt.Sprintf("error (%s): %v\n", category(err), err)
			}
			docs := lines[1:]
			if len(docs) == 0 {
				docs = []string{"{}"}
			}
			var out strings.Builder
			for _, line := range docs {
				doc := parseValue(t, line)
				ctx := NewContext(scope, doc.Data, now)
				copy(ctx.Vars, letVals)
				r, err := e.Eval(ctx)
				if err != nil {
					fmt.Fprintf(&out, "error (%s): %v\n", category(err), err)
					continue
				}
				out.WriteString(show(r) + "\n")
			}
			return out.String()
		})
	})
}

func parseValue(t *testing.T, s string) bsoncore.Value {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"v": `+s+`}`), false, &raw); err != nil {
		t.Fatalf("bad extended JSON %s: %v", s, err)
	}
	return bsoncore.Document(raw).Lookup("v")
}

func category(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{langerr.ErrBadValue, "BadValue"}, {langerr.ErrTypeMismatch, "TypeMismatch"}, {langerr.ErrFailedToParse, "FailedToParse"},
		{ErrUnknownOperator, "UnknownOperator"}, {ErrUndefinedVariable, "UndefinedVariable"},
		{ErrArity, "Arity"}, {langerr.ErrNotImplemented, "NotImplemented"}, {ErrConversion, "Conversion"},
		{ErrFieldPath, "FieldPath"}, {ErrExpressionSpec, "ExpressionSpec"}, {ErrDivideByZero, "DivideByZero"},
		{ErrNoSwitchBranch, "NoSwitchBranch"}, {ErrInvalidRegex, "InvalidRegex"}, {ErrBadRegexOptions, "BadRegexOptions"},
		{ErrTimezone, "Timezone"}, {ErrNullInPairKey, "NullInPairKey"}, {ErrNullInKV, "NullInKV"},
		{ErrInternalConstant, "InternalConstant"}, {ErrNotNumeric, "NotNumeric"}, {ErrModByZero, "ModByZero"},
		{ErrModByZeroDecimal, "ModByZeroDecimal"}, {ErrModType, "ModType"}, {ErrAbsOverflow, "AbsOverflow"},
		{ErrSqrtDomain, "SqrtDomain"}, {ErrLnDomain, "LnDomain"}, {ErrLog10Domain, "Log10Domain"},
		{ErrLogDomain, "LogDomain"}, {ErrLogBase, "LogBase"}, {ErrPowZeroBase, "PowZeroBase"},
		{ErrTrigDomain, "TrigDomain"}, {ErrRangeStep, "RangeStep"},
		{ErrInNotArray, "InNotArray"}, {ErrSizeNotArray, "SizeNotArray"}, {ErrElemAtNotArray, "ElemAtNotArray"}, {ErrElemAtIndexType, "ElemAtIndexType"},
		{ErrElemAtIndexInt, "ElemAtIndexInt"}, {ErrConcatArraysType, "ConcatArraysType"}, {ErrSliceNotArray, "SliceNotArray"},
		{ErrSlicePosType, "SlicePosType"}, {ErrSlicePosInt, "SlicePosInt"}, {ErrSliceNType, "SliceNType"},
		{ErrSliceNInt, "SliceNInt"}, {ErrSliceNPositive, "SliceNPositive"}, {ErrReverseArrayType, "ReverseArrayType"},
		{ErrArrayToObjectType, "ArrayToObjectType"}, {ErrObjectToArrayType, "ObjectToArrayType"},
		{ErrSortArrayType, "SortArrayType"}, {ErrZipType, "ZipType"}, {ErrFilterInput, "FilterInput"},
		{ErrMapInput, "MapInput"}, {ErrReduceInput, "ReduceInput"}, {ErrFilterLimitInt, "FilterLimitInt"},
		{ErrFilterLimitPositive, "FilterLimitPositive"}, {ErrSplitInput, "SplitInput"},
		{ErrSplitSeparator, "SplitSeparator"}, {ErrSplitEmpty, "SplitEmpty"},
		{ErrConcatType, "ConcatType"}, {ErrToStringType, "ToStringType"}, {ErrStrLenCPType, "StrLenCPType"},
		{ErrStrLenBytesType, "StrLenBytesType"}, {ErrSubstrStartType, "SubstrStartType"}, {ErrSubstrLengthType, "SubstrLengthType"},
		{ErrSubstrStartContinuation, "SubstrStartContinuation"}, {ErrSubstrEndMidChar, "SubstrEndMidChar"},
		{ErrSubstrCPStartType, "SubstrCPStartType"}, {ErrSubstrCPStartInt, "SubstrCPStartInt"}, {ErrSubstrCPLengthType, "SubstrCPLengthType"},
		{ErrSubstrCPLengthInt, "SubstrCPLengthInt"}, {ErrSubstrCPLengthNegative, "SubstrCPLengthNegative"},
		{ErrSubstrCPStartNegative, "SubstrCPStartNegative"}, {ErrIndexOfArrayInput, "IndexOfArrayInput"},
		{ErrIndexOfBytesInput, "IndexOfBytesInput"}, {ErrIndexOfBytesToken, "IndexOfBytesToken"}, {ErrIndexOfCPInput, "IndexOfCPInput"},
		{ErrIndexOfCPToken, "IndexOfCPToken"}, {ErrIndexOfIntegral, "IndexOfIntegral"}, {ErrIndexOfNegative, "IndexOfNegative"},
		{ErrTrimInput, "TrimInput"}, {ErrTrimChars, "TrimChars"}, {ErrRegexInput, "RegexInput"}, {ErrRegexPattern, "RegexPattern"},
		{ErrRegexOptions, "RegexOptions"}, {ErrRegexOptionsTwice, "RegexOptionsTwice"}, {ErrReplaceInput, "ReplaceInput"},
		{ErrReplaceFind, "ReplaceFind"}, {ErrReplaceReplacement, "ReplaceReplacement"},
		{ErrSetUnionType, "SetUnionType"}, {ErrSetIntersectionType, "SetIntersectionType"},
		{ErrSetDifferenceFirst, "SetDifferenceFirst"}, {ErrSetDifferenceSecond, "SetDifferenceSecond"},
		{ErrSetIsSubsetFirst, "SetIsSubsetFirst"}, {ErrSetIsSubsetSecond, "SetIsSubsetSecond"},
		{ErrSetEqualsType, "SetEqualsType"}, {ErrSetEqualsArity, "SetEqualsArity"},
		{ErrAllElementsTrueType, "AllElementsTrueType"}, {ErrAnyElementTrueType, "AnyElementTrueType"},
		{ErrRangedArity, "RangedArity"}, {ErrIfNullArity, "IfNullArity"}, {ErrSingleArgument, "SingleArgument"},
		{ErrToDateType, "ToDateType"}, {ErrTimezoneType, "TimezoneType"}, {ErrFormatUnmatched, "FormatUnmatched"},
		{ErrFormatCharacter, "FormatCharacter"}, {ErrDateToStringFormat, "DateToStringFormat"},
		{ErrDateFromStringFormat, "DateFromStringFormat"}, {ErrDateToStringRange, "DateToStringRange"},
		{ErrISO8601Type, "ISO8601Type"}, {ErrDatePartsMixed, "DatePartsMixed"}, {ErrDatePartsNoYear, "DatePartsNoYear"},
		{ErrDatePartType, "DatePartType"}, {ErrDatePartYear, "DatePartYear"}, {ErrDatePartISOYear, "DatePartISOYear"},
		{ErrDatePartRange, "DatePartRange"}, {ErrDateArithStart, "DateArithStart"}, {ErrDateArithUnitType, "DateArithUnitType"},
		{ErrDateArithAmount, "DateArithAmount"}, {ErrDateDiffDate, "DateDiffDate"}, {ErrDateUnitType, "DateUnitType"},
		{ErrDateUnitValue, "DateUnitValue"}, {ErrStartOfWeekType, "StartOfWeekType"}, {ErrStartOfWeekValue, "StartOfWeekValue"},
		{ErrBinSizeType, "BinSizeType"}, {ErrBinSizePositive, "BinSizePositive"},
		{ErrTrimNotObject, "TrimNotObject"}, {ErrTrimUnknown, "TrimUnknown"}, {ErrTrimNoInput, "TrimNoInput"},
		{ErrRegexNotObject, "RegexNotObject"}, {ErrRegexUnknown, "RegexUnknown"}, {ErrRegexNoInput, "RegexNoInput"},
		{ErrRegexNoRegex, "RegexNoRegex"}, {ErrRegexNullPattern, "RegexNullPattern"}, {ErrRegexNullOptions, "RegexNullOptions"}, {ErrRegexCompile, "RegexCompile"},
		{ErrRangeStartType, "RangeStartType"}, {ErrRangeStartInt, "RangeStartInt"}, {ErrRangeEndType, "RangeEndType"}, {ErrRangeEndInt, "RangeEndInt"}, {ErrRangeStepType, "RangeStepType"}, {ErrRangeStepInt, "RangeStepInt"}, {ErrAddTwoDates, "AddTwoDates"}, {ErrLogArgType, "LogArgType"}, {ErrLogBaseType, "LogBaseType"}, {ErrPowBaseType, "PowBaseType"}, {ErrPowExpType, "PowExpType"}, {ErrRoundType, "RoundType"}, {ErrRoundPlaceInt, "RoundPlaceInt"}, {ErrRoundPlaceRange, "RoundPlaceRange"},
		{ErrVarNameEmpty, "VarNameEmpty"}, {ErrVarNameStart, "VarNameStart"}, {ErrVarNameChar, "VarNameChar"},
		{ErrDateArithUnknown, "DateArithUnknown"}, {ErrDateArithMissing, "DateArithMissing"}, {ErrDateDiffUnknown, "DateDiffUnknown"}, {ErrDateDiffNoStart, "DateDiffNoStart"}, {ErrDateDiffNoEnd, "DateDiffNoEnd"}, {ErrDateDiffNoUnit, "DateDiffNoUnit"}, {ErrDateTruncUnknown, "DateTruncUnknown"}, {ErrDateTruncNoDate, "DateTruncNoDate"}, {ErrDateTruncNoUnit, "DateTruncNoUnit"}, {ErrGetFieldUnknown, "GetFieldUnknown"}, {ErrGetFieldNoField, "GetFieldNoField"}, {ErrSetFieldUnknown, "SetFieldUnknown"}, {ErrSetFieldNoField, "SetFieldNoField"}, {ErrSetFieldNoValue, "SetFieldNoValue"}, {ErrSetFieldNoInput, "SetFieldNoInput"}, {ErrSetFieldInputObject, "SetFieldInputObject"}, {ErrSortArrayUnknown, "SortArrayUnknown"}, {ErrSortArrayNoInput, "SortArrayNoInput"}, {ErrSortArrayNoSort, "SortArrayNoSort"}, {ErrRandArguments, "RandArguments"},
		{ErrDatePartsMixedISO, "DatePartsMixedISO"},
		{ErrTrimCharsContinuation, "TrimCharsContinuation"}, {ErrTrimCharsTruncated, "TrimCharsTruncated"},
		{ErrGetFieldNonConstant, "GetFieldNonConstant"}, {ErrGetFieldFieldType, "GetFieldFieldType"}, {ErrSetFieldNonConstant, "SetFieldNonConstant"}, {ErrSetFieldFieldType, "SetFieldFieldType"},
		{ErrDatePartOption, "DatePartOption"}, {ErrDatePartArray, "DatePartArray"}, {ErrDatePartNoDate, "DatePartNoDate"},
		{ErrReplaceNotObject, "ReplaceNotObject"}, {ErrReplaceUnknown, "ReplaceUnknown"}, {ErrReplaceNoInput, "ReplaceNoInput"}, {ErrReplaceNoFind, "ReplaceNoFind"}, {ErrReplaceNoReplacement, "ReplaceNoReplacement"},
		{ErrMapNotObject, "MapNotObject"}, {ErrMapUnknown, "MapUnknown"},
		{ErrMapNoInput, "MapNoInput"}, {ErrMapNoIn, "MapNoIn"}, {ErrFilterNotObject, "FilterNotObject"},
		{ErrFilterUnknown, "FilterUnknown"}, {ErrFilterNoInput, "FilterNoInput"}, {ErrFilterNoCond, "FilterNoCond"},
		{ErrLetNotObject, "LetNotObject"}, {ErrLetUnknown, "LetUnknown"}, {ErrLetNoVars, "LetNoVars"},
		{ErrLetNoIn, "LetNoIn"}, {ErrLetVarsObject, "LetVarsObject"}, {ErrReduceNotObject, "ReduceNotObject"},
		{ErrReduceUnknown, "ReduceUnknown"}, {ErrReduceNoInput, "ReduceNoInput"}, {ErrReduceNoInitial, "ReduceNoInitial"},
		{ErrReduceNoIn, "ReduceNoIn"}, {ErrZipNotObject, "ZipNotObject"}, {ErrZipInputsArray, "ZipInputsArray"},
		{ErrZipDefaultArray, "ZipDefaultArray"}, {ErrZipLongestBool, "ZipLongestBool"}, {ErrZipUnknown, "ZipUnknown"},
		{ErrZipNoInputs, "ZipNoInputs"}, {ErrZipDefaults, "ZipDefaults"}, {ErrZipDefaultsLen, "ZipDefaultsLen"},
		{ErrDateToStringNotObject, "DateToStringNotObject"}, {ErrDateToStringUnknown, "DateToStringUnknown"}, {ErrDateToStringNoDate, "DateToStringNoDate"},
		{ErrDateFromStringNotObject, "DateFromStringNotObject"}, {ErrDateFromStringUnknown, "DateFromStringUnknown"}, {ErrDateFromStringNoString, "DateFromStringNoString"},
		{ErrDateToPartsNotObject, "DateToPartsNotObject"}, {ErrDateToPartsUnknown, "DateToPartsUnknown"}, {ErrDateToPartsNoDate, "DateToPartsNoDate"},
		{ErrDateFromPartsNotObject, "DateFromPartsNotObject"}, {ErrDateFromPartsUnknown, "DateFromPartsUnknown"}, {ErrDateArithNotObject, "DateArithNotObject"},
		{ErrDateDiffNotObject, "DateDiffNotObject"}, {ErrDateTruncNotObject, "DateTruncNotObject"}, {ErrCondUnknown, "CondUnknown"},
		{ErrCondNoIf, "CondNoIf"}, {ErrCondNoThen, "CondNoThen"}, {ErrCondNoElse, "CondNoElse"},
		{ErrSwitchNotObject, "SwitchNotObject"}, {ErrSwitchBranchesArray, "SwitchBranchesArray"}, {ErrSwitchBranchObject, "SwitchBranchObject"},
		{ErrSwitchBranchUnknown, "SwitchBranchUnknown"}, {ErrSwitchNoCase, "SwitchNoCase"}, {ErrSwitchNoThen, "SwitchNoThen"},
		{ErrSwitchUnknown, "SwitchUnknown"}, {ErrSwitchNoBranch, "SwitchNoBranch"}, {ErrSetFieldNotObject, "SetFieldNotObject"},
		{ErrSortArrayNotObject, "SortArrayNotObject"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "uncategorized"
}

// show renders a value in the notation of the testdata files.
func show(v bsoncore.Value) string {
	switch v.Type {
	case 0:
		return "missing"
	case bsoncore.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bsoncore.TypeInt64:
		return "long(" + strconv.FormatInt(v.Int64(), 10) + ")"
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		case f == math.Trunc(f) && math.Abs(f) < 1e15:
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bsoncore.TypeDecimal128:
		return "dec(" + bson.NewDecimal128(v.Decimal128()).String() + ")"
	case bsoncore.TypeString:
		return strconv.Quote(stringOf(v))
	case bsoncore.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeDateTime:
		return "date(" + time.UnixMilli(v.DateTime()).UTC().Format("2006-01-02T15:04:05.000Z") + ")"
	case bsoncore.TypeArray:
		var parts []string
		for _, x := range Elements(v) {
			parts = append(parts, show(x))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case bsoncore.TypeEmbeddedDocument:
		var parts []string
		for _, f := range Fields(v) {
			parts = append(parts, f.Key+": "+show(f.Val))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return v.String()
}
