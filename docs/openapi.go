// Package docs holds fairsched's reference documents. The Markdown files are
// for readers of the repository; openapi.json, the OpenAPI 3.1 description of
// the HTTP API, is also embedded here so that fairsched serve answers it at
// GET /api/v1/openapi.json with the same bytes.
package docs

import _ "embed"

// OpenAPI is openapi.json: the OpenAPI 3.1 document of the HTTP API. A test
// of the facade (TestOpenAPIRoutes and its neighbours in
// facade/openapi_test.go) keeps it and the server in agreement. Read-only.
//
//go:embed openapi.json
var OpenAPI []byte
