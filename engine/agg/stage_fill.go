package agg

import (
	"github.com/parsecdb/parsec/engine/langerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $fill fills null and missing fields: {partitionBy | partitionByFields,
// sortBy, output: {<field>: {value: <expression>} | {method: "locf" |
// "linear"}}}. As in MongoDB, it is a shorthand: the methods become one
// $setWindowFields ($locf, $linearFill) over the partitions in sortBy
// order, the values one $addFields of {$ifNull: ["$<field>", <value>]}.

func fillError(format string, args ...any) error {
	return langerr.New(langerr.ErrFailedToParse, format, args...)
}

func parseFill(p *pipelineParser, arg bsoncore.Value, _ bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, langerr.New(langerr.ErrTypeMismatch, "$fill specification must be an object, found %s", typeName(arg))
	}
	var partitionBy, sortBy, output bsoncore.Value
	var byFields []string
	havePartition, haveFields := false, false
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch k := el.Key(); k {
		case "partitionBy":
			partitionBy, havePartition = v, true
		case "partitionByFields":
			fields, err := partitionByFieldsArg("$fill", v)
			if err != nil {
				return nil, err
			}
			byFields = append(byFields, fields...)
			haveFields = true
		case "sortBy":
			if _, ok := v.DocumentOK(); !ok {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$fill.sortBy' is the wrong type '%s', expected type 'object'", typeName(v))
			}
			sortBy = v
		case "output":
			if _, ok := v.DocumentOK(); !ok {
				return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$fill.output' is the wrong type '%s', expected type 'object'", typeName(v))
			}
			output = v
		default:
			return nil, langerr.New(langerr.ErrFailedToParse, "BSON field '$fill.%s' is an unknown field.", k)
		}
	}
	if output.Type == 0 {
		return nil, langerr.New(langerr.ErrFailedToParse, "BSON field '$fill.output' is missing but a required field")
	}
	if havePartition && haveFields {
		return nil, fillError("Only one of 'partitionBy' and 'partitionByFields' may be specified in $fill")
	}

	// The window outputs (methods) and the $addFields values.
	wb := bsoncore.NewDocumentBuilder()
	ab := bsoncore.NewDocumentBuilder()
	methods, values := 0, 0
	outs, _ := output.Document().Elements()
	if len(outs) == 0 {
		return nil, fillError("$fill 'output' must name at least one field")
	}
	for _, o := range outs {
		field := o.Key()
		if err := checkFieldPath(field); err != nil {
			return nil, err
		}
		spec, ok := o.Value().DocumentOK()
		if !ok {
			return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '$fill.output.%s' is the wrong type '%s', expected type 'object'", field, typeName(o.Value()))
		}
		fields, _ := spec.Elements()
		if len(fields) != 1 {
			return nil, fillError("Exactly one fill method or value must be specified for each output field in $fill, found %d for '%s'", len(fields), field)
		}
		switch f := fields[0]; f.Key() {
		case "value":
			if _, err := p.env.compile(f.Value()); err != nil {
				return nil, err
			}
			ab.AppendDocument(field, bsoncore.NewDocumentBuilder().
				AppendArray("$ifNull", bsoncore.NewArrayBuilder().AppendString("$"+field).AppendValue(f.Value()).Build()).Build())
			values++
		case "method":
			m, ok := f.Value().StringValueOK()
			fn := map[string]string{"locf": "$locf", "linear": "$linearFill"}[m]
			if !ok || fn == "" {
				return nil, fillError("Method for $fill must be one of 'locf' or 'linear', found %s for '%s'", f.Value(), field)
			}
			wb.AppendDocument(field, bsoncore.NewDocumentBuilder().AppendString(fn, "$"+field).Build())
			methods++
		default:
			return nil, langerr.New(langerr.ErrFailedToParse, "BSON field '$fill.output.%s.%s' is an unknown field.", field, f.Key())
		}
	}
	if methods > 0 && sortBy.Type == 0 {
		return nil, fillError("sortBy is required when 'method' is used in $fill")
	}

	var stages []stage
	var err error
	if methods > 0 {
		sw := bsoncore.NewDocumentBuilder()
		switch {
		case havePartition:
			sw.AppendValue("partitionBy", partitionBy)
		case haveFields:
			pb := bsoncore.NewDocumentBuilder()
			for _, f := range byFields {
				pb.AppendString(f, "$"+f)
			}
			sw.AppendDocument("partitionBy", pb.Build())
		}
		sw.AppendValue("sortBy", sortBy)
		sw.AppendDocument("output", wb.Build())
		if stages, err = rewriteAs(p, stages, "$setWindowFields", docValue(sw.Build()), parseSetWindowFields); err != nil {
			return nil, err
		}
	} else if sortBy.Type != 0 {
		// Values only: sortBy still orders the output, as in MongoDB.
		if stages, err = rewriteAs(p, stages, "$sort", sortBy, parseSort); err != nil {
			return nil, err
		}
	}
	if values > 0 {
		if stages, err = rewriteAs(p, stages, "$addFields", docValue(ab.Build()), parseAddFields); err != nil {
			return nil, err
		}
	}
	return stages, nil
}

// rewriteAs appends to stages the stages parse makes of the stage {name:
// arg} that $fill is rewritten into.
func rewriteAs(p *pipelineParser, stages []stage, name string, arg bsoncore.Value, parse parser) ([]stage, error) {
	st, err := parse(p, arg, specOf(name, arg))
	return append(stages, st...), err
}

// partitionByFieldsArg reads the partitionByFields argument of stage
// ($densify, $fill): an array of field paths.
func partitionByFieldsArg(stage string, v bsoncore.Value) ([]string, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '%s.partitionByFields' is the wrong type '%s', expected type 'array'", stage, typeName(v))
	}
	vals, _ := arr.Values()
	fields := make([]string, 0, len(vals))
	for _, x := range vals {
		f, ok := x.StringValueOK()
		if !ok {
			return nil, langerr.New(langerr.ErrTypeMismatch, "BSON field '%s.partitionByFields' must hold strings, found %s", stage, typeName(x))
		}
		if err := checkFieldPath(f); err != nil {
			return nil, err
		}
		fields = append(fields, f)
	}
	return fields, nil
}
