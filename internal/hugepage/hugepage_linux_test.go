package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// vmFlags is the VmFlags line of the mapping holding addr in /proc/self/smaps.
func vmFlags(t *testing.T, addr uintptr) []string {
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		// A mapping's first line is "lo-hi perms offset dev inode [path]"; its attributes
		// follow as "Name: value" lines.
		if fields := strings.Fields(line); len(fields) >= 5 && !strings.HasSuffix(fields[0], ":") {
			var lo, hi uintptr
			_, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi)
			require.NoError(t, err, line)
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// On Linux the buffer's whole huge pages are marked for huge pages during the fill and marked
// against them after it (so the kernel's collapser leaves that memory alone once it is filled).
func TestTheHintLastsForTheFillOnly(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	mem, err := unix.Mmap(-1, 0, 12<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	// 8 MiB starting one small page past a huge-page boundary: never aligned, wherever the
	// kernel placed the mapping.
	base := uintptr(unsafe.Pointer(&mem[0]))
	from := int((base+pageBytes-1)&^(pageBytes-1)-base) + 4096
	buf := mem[from : from+8<<20]
	start := uintptr(unsafe.Pointer(&buf[0]))
	require.NotZero(t, start%pageBytes)
	lo, _ := interior(start, uintptr(len(buf)))

	done, err := prefer(buf)
	require.NoError(t, err)
	require.Contains(t, vmFlags(t, lo), "hg", "during the fill")
	require.NotContains(t, vmFlags(t, start), "hg", "the partial page before the first whole one is not hinted")
	for i := range buf {
		buf[i] = byte(i)
	}
	done()
	require.Contains(t, vmFlags(t, lo), "nh", "after the fill")
	require.NotContains(t, vmFlags(t, lo), "hg")
	for i := 0; i < len(buf); i += 4093 {
		require.Equal(t, byte(i), buf[i])
	}
}

// Every hinted range ends marked against huge pages, so neighbouring ranges merge into one
// mapping again: hinting many buffers of the Go heap leaves the process with about as many
// mappings as before (each mapping costs the kernel, and there is a per-process limit).
func TestManyHintsDoNotFragmentTheProcesssMappings(t *testing.T) {
	mappings := func() int {
		b, err := os.ReadFile("/proc/self/maps")
		require.NoError(t, err)
		return strings.Count(string(b), "\n")
	}
	before := mappings()
	var live [][]byte // some buffers stay live while others are freed and their memory reused
	for i := range 300 {
		buf := make([]byte, MinBytes+(i%13)<<20+i*4096)
		done := Prefer(buf)
		for j := 0; j < len(buf); j += 4096 {
			buf[j] = byte(i)
		}
		done()
		if i%3 == 0 {
			live = append(live, buf)
		}
		if len(live) > 16 {
			live = live[1:]
		}
	}
	after := mappings()
	t.Logf("mappings: %d before, %d after 300 hinted buffers", before, after)
	require.Less(t, after, before+64, "hinted ranges merge back into few mappings")
}
