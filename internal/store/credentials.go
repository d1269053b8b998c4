package store

import (
	"context"
	"fmt"
)

// SetEndpointCredentials keeps an endpoint's destination url with its
// password, sealed (nil: it has none any more); run it in the
// transaction that creates or updates the endpoint.
func (q *Q) SetEndpointCredentials(ctx context.Context, endpointID string, urlSealed []byte) error {
	if urlSealed == nil {
		if _, err := q.exec(ctx, `DELETE FROM hookd_endpoint_credentials WHERE endpoint_id = $1`, endpointID); err != nil {
			return fmt.Errorf("drop credentials of %s: %w", endpointID, err)
		}
		return nil
	}
	if _, err := q.exec(ctx, `INSERT INTO hookd_endpoint_credentials (endpoint_id, url_sealed) VALUES ($1, $2)
		ON CONFLICT (endpoint_id) DO UPDATE SET url_sealed = excluded.url_sealed`, endpointID, urlSealed); err != nil {
		return fmt.Errorf("set credentials of %s: %w", endpointID, err)
	}
	return nil
}

// EndpointCredentials is an endpoint's sealed destination url; nil when
// it has none (its url carries no password).
func (q *Q) EndpointCredentials(ctx context.Context, endpointID string) ([]byte, error) {
	var sealed []byte
	err := q.queryRow(ctx, `SELECT url_sealed FROM hookd_endpoint_credentials WHERE endpoint_id = $1`, endpointID).Scan(&sealed)
	if NotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read credentials of %s: %w", endpointID, err)
	}
	return sealed, nil
}
