package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// maxSlots bounds the workers of one host that get a default static membership id.
const maxSlots = 64

// groupInstanceID resolves the group_instance_id setting: "off" disables static
// membership, an explicit value is used as is, and by default the id is the host name and
// the lowest slot no other worker on this host holds. A slot is an exclusive lock on a
// file that the kernel releases when the process dies, even by kill -9, so a restarted
// worker takes the same id and gets its partitions back at once, and two workers on one
// host never share an id (the broker would fence one). release closes the lock at exit.
func groupInstanceID(setting string) (id string, release func(), err error) {
	switch setting {
	case "off":
		return "", func() {}, nil
	case "":
	default:
		return setting, func() {}, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", nil, fmt.Errorf("group_instance_id: host name: %w", err)
	}
	for slot := range maxSlots {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("dlq-worker.slot-%d.lock", slot)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			// A read-only root (a container's readOnlyRootFilesystem) has no lock to take.
			return "", nil, fmt.Errorf("group_instance_id: the default takes a lock file in the temporary directory: %w; "+
				"set it (DLQ_WORKER_GROUP_INSTANCE_ID) to a name stable for this worker and unique in its group, such as a StatefulSet pod's name, or to off", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return fmt.Sprintf("%s-%d", host, slot), func() { _ = f.Close() }, nil
		}
		_ = f.Close()
	}
	return "", nil, errors.New("group_instance_id: every slot of this host is taken; set it explicitly or to off")
}
