package provenance

import "testing"

// The cgroup mode is filled on every machine (it stayed empty before).
func TestCollectCgroupMode(t *testing.T) {
	switch m := Collect("t", nil).CgroupMode; m {
	case "v1", "hybrid", "v2", "none":
	default:
		t.Errorf("Collect().CgroupMode = %q, want v1, hybrid, v2 or none", m)
	}
}
