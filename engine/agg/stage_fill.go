package agg

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// $fill fills null and missing fields: {partitionBy | partitionByFields,
// sortBy, output: {<field>: {value: <expression>} | {method: "locf" |
// "linear"}}}. As in MongoDB, it is a shorthand: the methods become one
// $setWindowFields ($locf, $linearFill) over the partitions in sortBy
// order, the values one $addFields of {$ifNull: ["$<field>", <value>]}.

func fillError(format string, args ...any) error { return errorOf(ErrFailedToParse, format, args...) }

func parseFill(p *pipelineParser, arg bsoncore.Value, _ bsoncore.Document) ([]stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, errorOf(ErrTypeMismatch, "$fill specification must be an object, found %s", typeName(arg))
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
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, errorOf(ErrTypeMismatch, "BSON field '$fill.partitionByFields' is the wrong type '%s', expected type 'array'", typeName(v))
			}
			vals, _ := arr.Values()
			for _, f := range vals {
				s, ok := f.StringValueOK()
				if !ok {
					return nil, errorOf(ErrTypeMismatch, "BSON field '$fill.partitionByFields' must hold strings, found %s", typeName(f))
				}
				if err := checkFieldPath(s); err != nil {
					return nil, err
				}
				byFields = append(byFields, s)
			}
			haveFields = true
		case "sortBy":
			if _, ok := v.DocumentOK(); !ok {
				return nil, errorOf(ErrTypeMismatch, "BSON field '$fill.sortBy' is the wrong type '%s', expected type 'object'", typeName(v))
			}
			sortBy = v
		case "output":
			if _, ok := v.DocumentOK(); !ok {
				return nil, errorOf(ErrTypeMismatch, "BSON field '$fill.output' is the wrong type '%s', expected type 'object'", typeName(v))
			}
			output = v
		default:
			return nil, errorOf(ErrFailedToParse, "BSON field '$fill.%s' is an unknown field.", k)
		}
	}
	if output.Type == 0 {
		return nil, errorOf(ErrFailedToParse, "BSON field '$fill.output' is missing but a required field")
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
			return nil, errorOf(ErrTypeMismatch, "BSON field '$fill.output.%s' is the wrong type '%s', expected type 'object'", field, typeName(o.Value()))
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
			return nil, errorOf(ErrFailedToParse, "BSON field '$fill.output.%s.%s' is an unknown field.", field, f.Key())
		}
	}
	if methods > 0 && sortBy.Type == 0 {
		return nil, fillError("sortBy is required when 'method' is used in $fill")
	}

	var stages []stage
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
		spec := sw.Build()
		raw := bsoncore.NewDocumentBuilder().AppendDocument("$setWindowFields", spec).Build()
		st, err := parseSetWindowFields(p, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: spec}, raw)
		if err != nil {
			return nil, err
		}
		stages = append(stages, st...)
	} else if sortBy.Type != 0 {
		// Values only: sortBy still orders the output, as in MongoDB.
		raw := bsoncore.NewDocumentBuilder().AppendValue("$sort", sortBy).Build()
		st, err := parseSort(p, sortBy, raw)
		if err != nil {
			return nil, err
		}
		stages = append(stages, st...)
	}
	if values > 0 {
		spec := ab.Build()
		raw := bsoncore.NewDocumentBuilder().AppendDocument("$addFields", spec).Build()
		st, err := parseAddFields(p, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: spec}, raw)
		if err != nil {
			return nil, err
		}
		stages = append(stages, st...)
	}
	return stages, nil
}
