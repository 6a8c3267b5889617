package jsonkind

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestWant(t *testing.T) {
	var v struct {
		S  string
		N  int
		U  uint
		F  float64
		B  bool
		A  []int
		O  map[string]int
		P  *string
		St struct{ X int }
	}
	for field, want := range map[string]string{
		"S": "a string", "N": "a whole number", "U": "a whole number, 0 or more", "F": "a number",
		"B": "true or false", "A": "an array", "O": "an object", "P": "a string", "St": "an object",
	} {
		err := json.Unmarshal([]byte(`{"`+field+`": [[]]}`), &v)
		if field == "A" {
			err = json.Unmarshal([]byte(`{"A": "x"}`), &v)
		}
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Fatalf("%s: %v, want a type error", field, err)
		}
		if got := Want(te.Type); got != want {
			t.Errorf("%s (%v): %q, want %q", field, te.Type, got, want)
		}
	}
	if got := Want(nil); got != "another type" {
		t.Errorf("nil: %q", got)
	}
}
