package probe

import (
	"os"
	"testing"
)

// TestMain gives PoCL a kernel cache of this test binary's own: go test runs packages in
// parallel, and two processes building into one cache can abort PoCL's linker.
func TestMain(m *testing.M) {
	if os.Getenv("POCL_CACHE_DIR") == "" {
		dir, err := os.MkdirTemp("", "tempest-pocl-")
		if err == nil {
			os.Setenv("POCL_CACHE_DIR", dir)
			code := m.Run()
			os.RemoveAll(dir)
			os.Exit(code)
		}
	}
	os.Exit(m.Run())
}
