package engine

// Index errors, with the codeName MongoDB gives each.
const (
	ErrCannotCreateIndex               Code = 67
	ErrIndexOptionsConflict            Code = 85
	ErrIndexKeySpecsConflict           Code = 86
	ErrCannotIndexParallelArrays       Code = 171
	ErrInvalidIndexSpecificationOption Code = 197
	ErrIndexAlreadyExists              Code = 68
	ErrCannotDropShardKeyIndex         Code = 370
)

func init() {
	for code, name := range map[Code]string{
		ErrCannotCreateIndex:               "CannotCreateIndex",
		ErrIndexOptionsConflict:            "IndexOptionsConflict",
		ErrIndexKeySpecsConflict:           "IndexKeySpecsConflict",
		ErrCannotIndexParallelArrays:       "CannotIndexParallelArrays",
		ErrInvalidIndexSpecificationOption: "InvalidIndexSpecificationOption",
		ErrIndexAlreadyExists:              "IndexAlreadyExists",
		ErrCannotDropShardKeyIndex:         "CannotDropShardKeyIndex",
	} {
		codeNames[code] = name
	}
}
