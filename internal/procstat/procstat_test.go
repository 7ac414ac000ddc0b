package procstat

import (
	"os"
	"testing"
)

func TestPeakRSSMiB(t *testing.T) {
	mib, err := PeakRSSMiB(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if mib <= 0 {
		t.Fatalf("peak RSS of this test process is %v MiB", mib)
	}
	if _, err := PeakRSSMiB(-1); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
