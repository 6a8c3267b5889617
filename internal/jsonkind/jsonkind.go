// Package jsonkind names, in JSON's terms, the value a Go type decodes
// from, for error messages that must not speak of Go types
// (encoding/json's UnmarshalTypeError names them).
package jsonkind

import "reflect"

// Want names the JSON value t takes, with its article: "a string", "a
// whole number", "an array", "an object".
func Want(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct, reflect.Interface:
		return "an object"
	}
	return t.String()
}
