package webhook

import "net/http"

// A receiver tells hookd what to do next with the header HeaderDelivery
// on its answer (the Standard Webhooks proposal, spec PR #291):
//
//	webhook-delivery: disable        hookd disables the endpoint ("the receiver
//	                                 asked to stop") and notifies its owner
//	                                 (hookd.endpoint.disabled); nothing more is sent
//	                                 until the owner enables it again
//	webhook-delivery: abort-message  hookd ends this delivery now, without
//	                                 further attempts, whatever the status
//
// Any other value is ignored. Both work on any status: a 2xx with disable
// is delivered and then stops the endpoint; a 4xx or 5xx with
// abort-message is not retried.
const (
	HeaderDelivery       = "webhook-delivery"
	DeliveryDisable      = "disable"
	DeliveryAbortMessage = "abort-message"
)

// AnswerDisable sets h (a response's header, before WriteHeader) to ask
// hookd to disable the endpoint this delivery came to.
//
//	webhook.AnswerDisable(w.Header())
//	w.WriteHeader(http.StatusGone)
func AnswerDisable(h http.Header) { h.Set(HeaderDelivery, DeliveryDisable) }

// AnswerAbortMessage sets h (a response's header, before WriteHeader) to
// ask hookd to end this delivery without another attempt.
//
//	webhook.AnswerAbortMessage(w.Header())
//	w.WriteHeader(http.StatusUnprocessableEntity)
func AnswerAbortMessage(h http.Header) { h.Set(HeaderDelivery, DeliveryAbortMessage) }
