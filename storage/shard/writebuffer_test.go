package shard

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Appends wait for room, then fail with ErrOverloaded when sealing cannot make any.
func TestWriteBufferRefusesAppendsWhenItCannotMakeRoom(t *testing.T) {
	wb := NewWriteBuffer(1<<10, time.Second, nil)
	defer wb.Close()
	wb.grow(2 << 10) // bytes no writer can seal
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := wb.Admit(ctx, 10)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	start := time.Now()
	_, err = wb.Admit(context.Background(), 10)
	require.ErrorIs(t, err, ErrOverloaded)
	require.GreaterOrEqual(t, time.Since(start), writeBufferMaxWait-time.Second/2)
	go func() { time.Sleep(50 * time.Millisecond); wb.shrink(2 << 10) }()
	release, err := wb.Admit(context.Background(), 10)
	require.NoError(t, err, "room made wakes the append")
	// A second append waits for the first's reservation only when they do not both fit.
	second, err := wb.Admit(context.Background(), 10)
	require.NoError(t, err)
	second()
	release()
	big, err := wb.Admit(context.Background(), 1<<20)
	require.NoError(t, err, "a lone append larger than the room left still goes")
	big()
}
