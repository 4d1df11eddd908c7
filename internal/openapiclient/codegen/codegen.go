// Package codegen generates package openapiclient's source from the API's OpenAPI document
// (validated first) with oapi-codegen.
package codegen

import (
	"context"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	oapi "github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"

	"github.com/strata-store/strata/api"
)

// Load parses and validates the document the API serves.
func Load() (*openapi3.T, error) {
	data, err := api.OpenAPIDocument("generated")
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	return doc, nil
}

// Source is the generated client (types and a client with responses).
func Source() (string, error) {
	doc, err := Load()
	if err != nil {
		return "", err
	}
	return oapi.Generate(doc, oapi.Configuration{
		PackageName: "openapiclient",
		Generate:    oapi.GenerateOptions{Client: true, Models: true},
	})
}
