package expr

import (
	"errors"
)

// Error categories of this package; its errors wrap one of them or one
// of engine/langerr's shared categories (BadValue, TypeMismatch,
// FailedToParse, NotImplemented).
var (
	// ErrUnknownOperator: "Unrecognized expression '$foo'".
	ErrUnknownOperator = errors.New("unrecognized expression")
	// ErrUndefinedVariable: $$name that no let or operator defines.
	ErrUndefinedVariable = errors.New("undefined variable")
	// ErrArity: an operator given the wrong number of arguments.
	ErrArity = errors.New("wrong number of arguments")
	// ErrInvalidRegex: a pattern the regex engine refuses.
	ErrInvalidRegex = errors.New("invalid regex")
	// ErrBadRegexOptions: a flag other than i, m, s, x (or u).
	ErrBadRegexOptions = errors.New("invalid regex options")
	// ErrConversion: $convert (and $toInt, ...) cannot convert a value.
	ErrConversion = errors.New("conversion failure")
	// ErrFieldPath: a malformed field path or variable name.
	ErrFieldPath = errors.New("bad field path")
	// ErrExpressionSpec: an object with an operator and other fields.
	ErrExpressionSpec = errors.New("bad expression specification")
	// ErrDivideByZero: $divide by zero.
	ErrDivideByZero = errors.New("division by zero")
	// ErrNoSwitchBranch: $switch with no matching branch and no default.
	ErrNoSwitchBranch = errors.New("no matching $switch branch")
	// ErrNullInPairKey and ErrNullInKV: $arrayToObject given a key with
	// a zero byte inside, in a [k, v] pair or a {k, v} document (MongoDB
	// gives the two forms different codes).
	ErrNullInPairKey = errors.New("null byte in a pair's key")
	ErrNullInKV      = errors.New("null byte in a k/v key")
	// ErrTimezone: a timezone identifier that is neither an Olson name
	// nor a UTC offset.
	ErrTimezone = errors.New("unrecognized time zone")
	// ErrInternalConstant: a command's let that sets a system variable
	// ($$NOW, $$CLUSTER_TIME, ...), which only MongoDB's own nodes may.
	ErrInternalConstant = errors.New("internal constant")
)

// Argument checks of the arithmetic operators that MongoDB makes each
// with its own assertion (so its own code), not a generic BadValue or
// TypeMismatch.
var (
	// ErrNotNumeric: a one-operand math operator ($abs, $sqrt, $sin,
	// ...) given something other than a number or null.
	ErrNotNumeric = errors.New("operand is not a number")
	// ErrModByZero: $mod by zero; ErrModByZeroDecimal when an operand is
	// a decimal, which MongoDB checks apart.
	ErrModByZero        = errors.New("$mod by zero")
	ErrModByZeroDecimal = errors.New("$mod by a decimal zero")
	// ErrModType: $mod of something other than numbers.
	ErrModType = errors.New("$mod of a non-number")
	// ErrAbsOverflow: $abs of the smallest long.
	ErrAbsOverflow = errors.New("$abs overflow")
	// ErrSqrtDomain, ErrLnDomain, ErrLog10Domain, ErrLogDomain and
	// ErrLogBase: a number outside the operator's domain.
	ErrSqrtDomain  = errors.New("$sqrt of a negative number")
	ErrLnDomain    = errors.New("$ln of a non-positive number")
	ErrLog10Domain = errors.New("$log10 of a non-positive number")
	ErrLogDomain   = errors.New("$log of a non-positive number")
	ErrLogBase     = errors.New("bad $log base")
	// ErrPowZeroBase: $pow of zero to a negative exponent.
	ErrPowZeroBase = errors.New("$pow of zero to a negative power")
	// ErrTrigDomain: a trigonometric operator's input outside its domain.
	ErrTrigDomain = errors.New("trigonometric input out of bounds")
	// ErrRangeStep: $range with a zero step.
	ErrRangeStep = errors.New("$range with a zero step")
	// ErrRangeStartType, ErrRangeStartInt, ErrRangeEndType,
	// ErrRangeEndInt, ErrRangeStepType and ErrRangeStepInt: $range's
	// start, end or step not a number, or not a 32-bit integer.
	ErrRangeStartType = errors.New("$range start is not a number")
	ErrRangeStartInt  = errors.New("$range start is not a 32-bit integer")
	ErrRangeEndType   = errors.New("$range end is not a number")
	ErrRangeEndInt    = errors.New("$range end is not a 32-bit integer")
	ErrRangeStepType  = errors.New("$range step is not a number")
	ErrRangeStepInt   = errors.New("$range step is not a 32-bit integer")
	// ErrAddTwoDates: $add of more than one date.
	ErrAddTwoDates = errors.New("$add of two dates")
	// ErrLogArgType, ErrLogBaseType, ErrPowBaseType and ErrPowExpType:
	// $log's argument or base, $pow's base or exponent not a number.
	ErrLogArgType  = errors.New("$log argument is not a number")
	ErrLogBaseType = errors.New("$log base is not a number")
	ErrPowBaseType = errors.New("$pow base is not a number")
	ErrPowExpType  = errors.New("$pow exponent is not a number")
	// ErrRoundType, ErrRoundPlaceInt and ErrRoundPlaceRange: $round's or
	// $trunc's number not a number, its place not an integer or outside
	// [-20, 100].
	ErrRoundType       = errors.New("$round of a non-number")
	ErrRoundPlaceInt   = errors.New("$round place is not an integer")
	ErrRoundPlaceRange = errors.New("$round place out of range")
)

// Argument checks of the array operators that MongoDB makes each with its
// own assertion.
var (
	// ErrInNotArray: $in whose second argument is not an array.
	ErrInNotArray = errors.New("$in of a non-array")
	// ErrSizeNotArray: $size of something other than an array.
	ErrSizeNotArray = errors.New("$size of a non-array")
	// ErrElemAtNotArray, ErrElemAtIndexType and ErrElemAtIndexInt:
	// $arrayElemAt (and $first, $last) of a non-array, or with an index
	// that is not a number or not a 32-bit integer.
	ErrElemAtNotArray  = errors.New("$arrayElemAt of a non-array")
	ErrElemAtIndexType = errors.New("$arrayElemAt index is not a number")
	ErrElemAtIndexInt  = errors.New("$arrayElemAt index is not a 32-bit integer")
	// ErrConcatArraysType: $concatArrays of a non-array.
	ErrConcatArraysType = errors.New("$concatArrays of a non-array")
	// ErrSliceNotArray, ErrSlicePosType, ErrSlicePosInt, ErrSliceNType,
	// ErrSliceNInt and ErrSliceNPositive: $slice's array, its second
	// argument (position or count) and its third (count).
	ErrSliceNotArray  = errors.New("$slice of a non-array")
	ErrSlicePosType   = errors.New("$slice second argument is not a number")
	ErrSlicePosInt    = errors.New("$slice second argument is not a 32-bit integer")
	ErrSliceNType     = errors.New("$slice third argument is not a number")
	ErrSliceNInt      = errors.New("$slice third argument is not a 32-bit integer")
	ErrSliceNPositive = errors.New("$slice third argument is not positive")
	// ErrReverseArrayType: $reverseArray of a non-array.
	ErrReverseArrayType = errors.New("$reverseArray of a non-array")
	// ErrArrayToObjectType: $arrayToObject of a non-array.
	ErrArrayToObjectType = errors.New("$arrayToObject of a non-array")
	// ErrObjectToArrayType: $objectToArray of a non-document.
	ErrObjectToArrayType = errors.New("$objectToArray of a non-document")
	// ErrSortArrayType: $sortArray of a non-array.
	ErrSortArrayType = errors.New("$sortArray of a non-array")
	// ErrZipType: $zip with an input that is not an array.
	ErrZipType = errors.New("$zip of a non-array")
	// ErrFilterInput, ErrMapInput and ErrReduceInput: $filter's, $map's
	// and $reduce's input not an array; ErrFilterLimitInt and
	// ErrFilterLimitPositive: $filter's limit not a 32-bit integer, or
	// not positive.
	ErrFilterInput         = errors.New("$filter input is not an array")
	ErrMapInput            = errors.New("$map input is not an array")
	ErrReduceInput         = errors.New("$reduce input is not an array")
	ErrFilterLimitInt      = errors.New("$filter limit is not a 32-bit integer")
	ErrFilterLimitPositive = errors.New("$filter limit is not positive")
	// ErrSplitInput, ErrSplitSeparator and ErrSplitEmpty: $split's
	// input or separator not a string, or an empty separator.
	ErrSplitInput     = errors.New("$split input is not a string")
	ErrSplitSeparator = errors.New("$split separator is not a string")
	ErrSplitEmpty     = errors.New("$split with an empty separator")
)

// Argument checks of the string operators that MongoDB makes each with
// its own assertion.
var (
	// ErrConcatType: $concat of something other than strings.
	ErrConcatType = errors.New("$concat of a non-string")
	// ErrToStringType: $toLower, $toUpper or $strcasecmp of a value
	// that has no string form (an array, a document, ...).
	ErrToStringType = errors.New("value has no string form")
	// ErrStrLenCPType and ErrStrLenBytesType: $strLenCP and
	// $strLenBytes of a non-string.
	ErrStrLenCPType    = errors.New("$strLenCP of a non-string")
	ErrStrLenBytesType = errors.New("$strLenBytes of a non-string")
	// ErrSubstrStartType, ErrSubstrLengthType, ErrSubstrStartContinuation
	// and ErrSubstrEndMidChar: $substrBytes (and $substr) with a
	// non-numeric index or length, or a range that cuts a UTF-8
	// character.
	ErrSubstrStartType         = errors.New("$substrBytes index is not a number")
	ErrSubstrLengthType        = errors.New("$substrBytes length is not a number")
	ErrSubstrStartContinuation = errors.New("$substrBytes starts inside a character")
	ErrSubstrEndMidChar        = errors.New("$substrBytes ends inside a character")
	// ErrSubstrCPStartType, ErrSubstrCPStartInt, ErrSubstrCPLengthType,
	// ErrSubstrCPLengthInt, ErrSubstrCPLengthNegative and
	// ErrSubstrCPStartNegative: $substrCP's index and length not
	// numbers, not 32-bit integers, or negative.
	ErrSubstrCPStartType      = errors.New("$substrCP index is not a number")
	ErrSubstrCPStartInt       = errors.New("$substrCP index is not a 32-bit integer")
	ErrSubstrCPLengthType     = errors.New("$substrCP length is not a number")
	ErrSubstrCPLengthInt      = errors.New("$substrCP length is not a 32-bit integer")
	ErrSubstrCPLengthNegative = errors.New("$substrCP length is negative")
	ErrSubstrCPStartNegative  = errors.New("$substrCP index is negative")
	// ErrIndexOfBytesInput, ErrIndexOfBytesToken, ErrIndexOfCPInput and
	// ErrIndexOfCPToken: $indexOfBytes' and $indexOfCP's string or
	// substring not a string; ErrIndexOfArrayInput: $indexOfArray's
	// array not an array; ErrIndexOfIntegral and ErrIndexOfNegative:
	// a starting or ending index (of these and $indexOfArray) that is not
	// an integer, or is negative.
	ErrIndexOfBytesInput = errors.New("$indexOfBytes input is not a string")
	ErrIndexOfBytesToken = errors.New("$indexOfBytes substring is not a string")
	ErrIndexOfCPInput    = errors.New("$indexOfCP input is not a string")
	ErrIndexOfCPToken    = errors.New("$indexOfCP substring is not a string")
	ErrIndexOfArrayInput = errors.New("$indexOfArray input is not an array")
	ErrIndexOfIntegral   = errors.New("index is not an integer")
	ErrIndexOfNegative   = errors.New("index is negative")
	// ErrTrimInput and ErrTrimChars: $trim's (and $ltrim's, $rtrim's)
	// input or chars not a string.
	ErrTrimInput = errors.New("$trim input is not a string")
	ErrTrimChars = errors.New("$trim chars is not a string")
	// ErrTrimCharsContinuation and ErrTrimCharsTruncated: $trim's chars
	// not UTF-8: a stray continuation byte, or a last code point cut
	// short.
	ErrTrimCharsContinuation = errors.New("$trim chars with a stray continuation byte")
	ErrTrimCharsTruncated    = errors.New("$trim chars with a truncated code point")
	// ErrRegexInput, ErrRegexPattern, ErrRegexOptions and
	// ErrRegexOptionsTwice: $regexMatch's (and $regexFind's,
	// $regexFindAll's) input, regex or options of the wrong type, or
	// options given both in the regex and apart.
	ErrRegexInput        = errors.New("regex input is not a string")
	ErrRegexPattern      = errors.New("regex is not a string or regex")
	ErrRegexOptions      = errors.New("regex options are not a string")
	ErrRegexOptionsTwice = errors.New("regex options given twice")
	// ErrReplaceInput, ErrReplaceFind and ErrReplaceReplacement:
	// $replaceOne's and $replaceAll's arguments not strings.
	ErrReplaceInput       = errors.New("$replace input is not a string")
	ErrReplaceFind        = errors.New("$replace find is not a string")
	ErrReplaceReplacement = errors.New("$replace replacement is not a string")
)

// Argument checks of the set operators and operator arities that MongoDB
// makes each with its own assertion.
var (
	// ErrSetUnionType and ErrSetIntersectionType: an operand of
	// $setUnion or $setIntersection that is neither an array nor null.
	ErrSetUnionType        = errors.New("$setUnion of a non-array")
	ErrSetIntersectionType = errors.New("$setIntersection of a non-array")
	// ErrSetDifferenceFirst, ErrSetDifferenceSecond, ErrSetIsSubsetFirst
	// and ErrSetIsSubsetSecond: $setDifference's or $setIsSubset's first
	// or second operand not an array.
	ErrSetDifferenceFirst  = errors.New("$setDifference of a non-array first operand")
	ErrSetDifferenceSecond = errors.New("$setDifference of a non-array second operand")
	ErrSetIsSubsetFirst    = errors.New("$setIsSubset of a non-array first operand")
	ErrSetIsSubsetSecond   = errors.New("$setIsSubset of a non-array second operand")
	// ErrSetEqualsType and ErrSetEqualsArity: $setEquals of a non-array
	// (null included), or of fewer than two operands.
	ErrSetEqualsType  = errors.New("$setEquals of a non-array")
	ErrSetEqualsArity = errors.New("$setEquals of fewer than two operands")
	// ErrAllElementsTrueType and ErrAnyElementTrueType:
	// $allElementsTrue's and $anyElementTrue's argument not an array.
	ErrAllElementsTrueType = errors.New("$allElementsTrue of a non-array")
	ErrAnyElementTrueType  = errors.New("$anyElementTrue of a non-array")
	// ErrRangedArity: an operator that takes a range of arguments
	// ($indexOfBytes, $slice, $round, ...) given too few or too many.
	ErrRangedArity = errors.New("argument count out of range")
	// ErrIfNullArity: $ifNull of fewer than two arguments.
	ErrIfNullArity = errors.New("$ifNull of fewer than two arguments")
	// ErrSingleArgument: a conversion shorthand ($toInt, ...) given an
	// array of other than one argument.
	ErrSingleArgument = errors.New("conversion of other than one argument")
)

// Argument checks of the date operators that MongoDB makes each with its
// own assertion.
var (
	// ErrToDateType: a date operator's date that is not a date, a
	// timestamp or an ObjectId.
	ErrToDateType = errors.New("value is not a date")
	// ErrDatePartOption, ErrDatePartNoDate and ErrDatePartArray: $year,
	// $month, ... given an object with a field other than date and
	// timezone, or without date, or an array of other than one argument.
	ErrDatePartOption = errors.New("unknown option to a date part operator")
	ErrDatePartNoDate = errors.New("date part operator without date")
	ErrDatePartArray  = errors.New("date part operator given an array of other than one argument")
	// ErrTimezoneType: a timezone that is not a string.
	ErrTimezoneType = errors.New("timezone is not a string")
	// ErrFormatUnmatched and ErrFormatCharacter: a date format ending in
	// a lone '%', or with an unknown '%' specifier.
	ErrFormatUnmatched = errors.New("unmatched '%' in a date format")
	ErrFormatCharacter = errors.New("unknown specifier in a date format")
	// ErrDateToStringFormat and ErrDateFromStringFormat: $dateToString's
	// or $dateFromString's format not a string.
	ErrDateToStringFormat   = errors.New("$dateToString format is not a string")
	ErrDateFromStringFormat = errors.New("$dateFromString format is not a string")
	// ErrDateToStringRange: $dateToString of a date whose year a
	// four-digit format cannot hold.
	ErrDateToStringRange = errors.New("date outside the years 0 to 9999")
	// ErrISO8601Type: $dateToParts' iso8601 not a bool.
	ErrISO8601Type = errors.New("iso8601 is not a bool")
	// ErrDatePartsMixed and ErrDatePartsNoYear: $dateFromParts mixing
	// calendar and ISO week parts, or with neither year.
	ErrDatePartsMixed = errors.New("$dateFromParts mixes calendar and ISO parts")
	// ErrDatePartsMixedISO: $dateFromParts with isoWeekYear and a
	// month or day.
	ErrDatePartsMixedISO = errors.New("$dateFromParts mixes ISO and calendar parts")
	ErrDatePartsNoYear   = errors.New("$dateFromParts without a year")
	// ErrDatePartType, ErrDatePartYear, ErrDatePartISOYear and
	// ErrDatePartRange: a $dateFromParts part that is not an integer,
	// a year or isoWeekYear out of range, another part out of range.
	ErrDatePartType    = errors.New("date part is not an integer")
	ErrDatePartYear    = errors.New("year out of range")
	ErrDatePartISOYear = errors.New("isoWeekYear out of range")
	ErrDatePartRange   = errors.New("date part out of range")
	// ErrDateArithStart, ErrDateArithUnitType and ErrDateArithAmount:
	// $dateAdd's or $dateSubtract's startDate not a date, unit not a
	// string, amount not an integer.
	ErrDateArithStart    = errors.New("startDate is not a date")
	ErrDateArithUnitType = errors.New("$dateAdd unit is not a string")
	ErrDateArithAmount   = errors.New("amount is not an integer")
	// ErrDateDiffDate: $dateDiff's startDate or endDate not a date.
	ErrDateDiffDate = errors.New("$dateDiff of a non-date")
	// ErrDateUnitType and ErrDateUnitValue: $dateDiff's or $dateTrunc's
	// unit not a string, or not a time unit.
	ErrDateUnitType  = errors.New("unit is not a string")
	ErrDateUnitValue = errors.New("unknown time unit")
	// ErrStartOfWeekType and ErrStartOfWeekValue: startOfWeek not a
	// string, or not a day of the week.
	ErrStartOfWeekType  = errors.New("startOfWeek is not a string")
	ErrStartOfWeekValue = errors.New("startOfWeek is not a day")
	// ErrBinSizeType and ErrBinSizePositive: $dateTrunc's binSize not a
	// 64-bit integer, or not positive.
	ErrBinSizeType     = errors.New("binSize is not an integer")
	ErrBinSizePositive = errors.New("binSize is not positive")
)
