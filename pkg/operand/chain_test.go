package operand

import "testing"

// Every init container of the catalog belongs to a known operand, waits for
// one, and names in Past an init container that operand runs.
func TestInitsNameKnownOperands(t *testing.T) {
	seen := map[[2]string]bool{}
	for _, i := range Inits {
		if _, err := Lookup(Real, i.Operand); err != nil {
			t.Errorf("%+v: %v", i, err)
		}
		if seen[[2]string{i.Operand, i.Container}] {
			t.Errorf("%+v listed twice", i)
		}
		seen[[2]string{i.Operand, i.Container}] = true
		if i.WaitsOn == "" {
			if i.Past != "" {
				t.Errorf("%+v: Past without WaitsOn", i)
			}
			continue
		}
		if _, err := Lookup(Real, i.WaitsOn); err != nil {
			t.Errorf("%+v: %v", i, err)
		}
		if i.Past == "" {
			continue
		}
		found := false
		for _, j := range InitsOf(i.WaitsOn) {
			found = found || j.Container == i.Past
		}
		if !found {
			t.Errorf("%+v: %s runs no init container %s", i, i.WaitsOn, i.Past)
		}
	}
}
