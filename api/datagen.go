// Datagen store routes (/api/v1/datagen), wire-compatible with lance-context's: the checkpoint
// event log of a data-generation pipeline — raw and checkpoint appends, item folds, failures,
// raw histories, the run overview, root statuses and blob downloads. The log's rules and reads
// live in package datagen; these handlers decode, check and answer.
package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/datagen"
	"github.com/strata-store/strata/storage/lsm"
)

// datagenBodyLimit is lance-context's limit on one events request (a lower --body-limit wins).
const datagenBodyLimit = "256M"

// DatagenEventsRequest is the body of POST /api/v1/datagen/{name}/events.
type DatagenEventsRequest struct {
	Events []datagen.Event `json:"events"`
}

// DatagenItemResponse answers an item fold (item is null when the item never started).
type DatagenItemResponse struct {
	Item *datagen.FoldedItem `json:"item"`
}

// DatagenFailuresResponse lists an item's failures.
type DatagenFailuresResponse struct {
	Failures []datagen.Failure `json:"failures"`
}

// DatagenEventsResponse is a raw history.
type DatagenEventsResponse struct {
	Events []datagen.Event `json:"events"`
}

// DatagenRootStatusesResponse classifies roots (a root never started is absent).
type DatagenRootStatusesResponse struct {
	Statuses map[string]string `json:"statuses"`
}

// registerDatagen registers the datagen kind's own routes (its registry routes:
// registerStoreRoutes).
func (h *handlers) registerDatagen(g *routeGroup) {
	g.POST("/datagen/:name/events", h.addDatagenEvents, middleware.BodyLimit(datagenBodyLimit), h.preferredWorkers(catalog.KindDatagen))
	g.GET("/datagen/:name/items/:item_id", h.foldDatagenItem)
	g.GET("/datagen/:name/items/:item_id/failures", h.datagenItemFailures)
	g.GET("/datagen/:name/items/:item_id/events", h.datagenItemEvents)
	g.GET("/datagen/:name/overview", h.datagenOverview)
	g.GET("/datagen/:name/root-status", h.datagenRootStatuses)
	g.GET("/datagen/:name/roots/:root_item_id/events", h.datagenRootEvents)
	g.GET("/datagen/:name/blobs/:event_id", h.datagenBlob)
}

func (h *handlers) createDatagen(c echo.Context) error {
	var req CreateStoreRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if len(req.StorageOptions) > 0 {
		if err := h.mayChooseStorage(c); err != nil {
			return err
		}
	}
	var options []byte
	if req.StorageOptions != nil {
		options, _ = json.Marshal(req.StorageOptions)
	}
	st, created, err := h.deps.Stores.Create(c.Request().Context(), catalog.KindDatagen, req.Name, nil, options)
	if err != nil {
		return err
	}
	return h.respondStore(c, catalog.KindDatagen, st, created, req.ExistOK)
}

// decodeDatagenBatch reads the events of an append: {"events": [...]} as JSON, or an Arrow IPC
// stream of the log's columns. The caller releases the batch.
func (h *handlers) decodeDatagenBatch(c echo.Context) (*datagen.Batch, error) {
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if !isJSON(ct) && !isArrowStream(ct) {
		return nil, unsupportedMediaType(ct, echo.MIMEApplicationJSON, MIMEArrowStream)
	}
	now := time.Now().UTC()
	if isArrowStream(ct) {
		body, err := readBody(c)
		if err != nil {
			return nil, err
		}
		rec, err := h.readArrowBody(c, body)
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		events, err := datagen.FromArrow(rec)
		if err != nil {
			return nil, err
		}
		return datagen.NewBatch(events, now, h.mem)
	}
	// Decoded as it arrives, an event at a time into the rows it becomes: no copy of the body, no
	// decoded event kept, and a bad event ends the request before the rest is read.
	batch, err := datagen.DecodeBatch(c.Request().Body, c.Request().ContentLength, now, h.mem)
	if limit := bodyLimitError(err); limit != nil {
		return nil, limit
	}
	if err != nil && !errors.Is(err, datagen.ErrInvalid) && !errors.Is(err, datagen.ErrTooLarge) {
		return nil, invalid("reading the request body: %v", err)
	}
	return batch, err
}

func (h *handlers) addDatagenEvents(c echo.Context) error {
	if err := catalog.ValidateName(c.Param("name")); err != nil {
		return err
	}
	batch, err := h.decodeDatagenBatch(c)
	if err != nil {
		return err
	}
	defer batch.Release()
	checkpoint := queryFlag(c, "checkpoint")
	return h.withStore(c, catalog.KindDatagen, func(s *lsm.Store) error {
		ctx := c.Request().Context()
		// Every append is sealed before it is answered (as in lance-context): an acknowledged
		// checkpoint is visible, whole, to readers on every worker.
		n, err := datagen.LogOf(s).Append(ctx, batch, checkpoint, func(rec arrow.RecordBatch) error {
			return h.appendRecord(ctx, catalog.KindDatagen, c.Param("name"), s, rec, true)
		})
		if err != nil {
			return err
		}
		v, err := tableVersion(ctx, s)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, AppendResponse{Version: v, Count: n})
	})
}

// withDatagenItem runs fn with the route's store log and its percent-decoded item id parameter.
func (h *handlers) withDatagenItem(c echo.Context, param string, fn func(*datagen.Log, string) error) error {
	item, err := pathParam(c, param)
	if err != nil {
		return err
	}
	return h.withStore(c, catalog.KindDatagen, func(s *lsm.Store) error { return fn(datagen.LogOf(s), item) })
}

func (h *handlers) foldDatagenItem(c echo.Context) error {
	load, err := boolParam(c, "load_blobs")
	if err != nil {
		return err
	}
	return h.withDatagenItem(c, "item_id", func(l *datagen.Log, item string) error {
		folded, err := l.Fold(c.Request().Context(), item, load)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, DatagenItemResponse{Item: folded})
	})
}

func (h *handlers) datagenItemFailures(c echo.Context) error {
	return h.withDatagenItem(c, "item_id", func(l *datagen.Log, item string) error {
		failures, err := l.ItemFailures(c.Request().Context(), item)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, DatagenFailuresResponse{Failures: failures})
	})
}

func (h *handlers) datagenItemEvents(c echo.Context) error {
	return h.withDatagenItem(c, "item_id", func(l *datagen.Log, item string) error {
		evs, err := l.ItemEvents(c.Request().Context(), item, false)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, DatagenEventsResponse{Events: nonNil(evs)})
	})
}

func (h *handlers) datagenRootEvents(c echo.Context) error {
	return h.withDatagenItem(c, "root_item_id", func(l *datagen.Log, root string) error {
		evs, err := l.RootEvents(c.Request().Context(), root)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, DatagenEventsResponse{Events: nonNil(evs)})
	})
}

func nonNil(evs []datagen.Event) []datagen.Event {
	if evs == nil {
		return []datagen.Event{}
	}
	return evs
}

func (h *handlers) datagenOverview(c echo.Context) error {
	return h.withStore(c, catalog.KindDatagen, func(s *lsm.Store) error {
		o, err := datagen.LogOf(s).Overview(c.Request().Context())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, o)
	})
}

// maxRootStatusIDs bounds one root-status request.
const maxRootStatusIDs = 10_000

func (h *handlers) datagenRootStatuses(c echo.Context) error {
	var ids []string
	for _, id := range strings.Split(c.QueryParam("ids"), ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) > maxRootStatusIDs {
		return invalid("ids names %d roots; at most %d per request", len(ids), maxRootStatusIDs)
	}
	return h.withStore(c, catalog.KindDatagen, func(s *lsm.Store) error {
		statuses, err := datagen.LogOf(s).RootStatuses(c.Request().Context(), ids)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, DatagenRootStatusesResponse{Statuses: statuses})
	})
}

// datagenBlob streams an event's blob bytes. ?item_id= (the event's item, as blob_event_ids
// pairs them) makes it one point read; without it the log is searched for the event.
func (h *handlers) datagenBlob(c echo.Context) error {
	item := c.QueryParam("item_id")
	return h.withDatagenItem(c, "event_id", func(l *datagen.Log, eventID string) error {
		blob, ok, err := l.Blob(c.Request().Context(), eventID, item)
		if err != nil {
			return err
		}
		if !ok {
			return notFound("Datagen event '%s' has no blob", eventID)
		}
		release, err := h.blobs.reserve(int64(len(blob)))
		if err != nil {
			return err
		}
		defer release()
		c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(blob)))
		return c.Blob(http.StatusOK, echo.MIMEOctetStream, blob)
	})
}

// boolParam reads an optional boolean query parameter (true/false/1/0; absent is false).
func boolParam(c echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalid("%s must be true or false", name)
	}
	return b, nil
}
