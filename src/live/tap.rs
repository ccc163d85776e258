//! The watches kube-rs restarts on its own, made visible. When a watch's connection is cut
//! mid-stream, kube-rs's client takes the cut for the end of the watch (as when the server
//! ends it at `timeoutSeconds`) and its watcher quietly starts a new one: no error, no
//! event. This layer on the client's HTTP stack sees each watch request: when its response
//! starts (the watch is open) and how its body ends. A body that fails, or that the
//! server ends well before the watch's timeout without an ERROR event (which kube-rs
//! reports itself), is reported as cut; the next watch of the same resource that opens
//! says the link is back.
//!
//! It also tidies every request's query: kube-rs 5 builds list and watch URLs as
//! `path?&limit=500` (an empty first pair), which servers accept but logs, proxies and
//! audit trails show as malformed; the request leaves as `path?limit=500`.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// What happened to one watch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchSignal {
    /// The server answered a watch of `path` (e.g. `/api/v1/pods`): its stream is open.
    Opened { path: String },
    /// The stream of a watch of `path` ended before its time: the connection failed
    /// (`error` says how) or the server closed it early.
    Cut { path: String, error: String },
}

/// Where the layer reports; cloned into the client. Only the latest subscriber hears.
#[derive(Debug, Clone, Default)]
pub struct WatchTap {
    tx: Arc<Mutex<Option<mpsc::UnboundedSender<WatchSignal>>>>,
}

impl WatchTap {
    /// Signals from now on go to the receiver returned.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<WatchSignal> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.tx.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        rx
    }

    fn send(&self, s: WatchSignal) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let _ = tx.send(s);
        }
    }

    /// The layer to put on the client's stack.
    pub fn layer(&self) -> TapLayer {
        TapLayer(self.clone())
    }
}

/// A stream the server ends this much before the watch's `timeoutSeconds` was not ended
/// by the timeout.
const EARLY: Duration = Duration::from_secs(5);

/// A watch request: its path and the timeout it asked for.
fn watch_of<B>(req: &Request<B>) -> Option<(String, Option<Duration>)> {
    let query = req.uri().query()?;
    let mut watch = false;
    let mut timeout = None;
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("watch", v)) => watch = v == "true" || v == "1",
            Some(("timeoutSeconds", v)) => timeout = v.parse().ok().map(Duration::from_secs),
            _ => {}
        }
    }
    watch.then(|| (req.uri().path().to_string(), timeout))
}

/// The URI without empty query pairs (`?&limit=500&&watch=true` becomes
/// `?limit=500&watch=true`, a query of nothing but `&` goes); `None` when it has none.
fn tidy_query(uri: &http::Uri) -> Option<http::Uri> {
    let query = uri.query()?;
    if !query.split('&').any(str::is_empty) {
        return None;
    }
    let pairs: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
    let path = uri.path();
    let pq = if pairs.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", pairs.join("&"))
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(pq.parse().ok()?);
    http::Uri::from_parts(parts).ok()
}

#[derive(Debug, Clone)]
pub struct TapLayer(WatchTap);

impl<S> tower::Layer<S> for TapLayer {
    type Service = TapService<S>;
    fn layer(&self, inner: S) -> TapService<S> {
        TapService {
            inner,
            tap: self.0.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct TapService<S> {
    inner: S,
    tap: WatchTap,
}

impl<S, Q, B> tower::Service<Request<Q>> for TapService<S>
where
    S: tower::Service<Request<Q>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    B: Body + Unpin + Send + 'static,
{
    type Response = Response<TappedBody<B>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<Q>) -> Self::Future {
        if let Some(uri) = tidy_query(req.uri()) {
            *req.uri_mut() = uri;
        }
        let watch = watch_of(&req);
        let fut = self.inner.call(req);
        let tap = self.tap.clone();
        Box::pin(async move {
            let res = fut.await?;
            let watching = match watch {
                Some((path, timeout)) if res.status().is_success() => {
                    tap.send(WatchSignal::Opened { path: path.clone() });
                    Some(Watching {
                        tap,
                        path,
                        opened: Instant::now(),
                        timeout,
                        error_event: false,
                    })
                }
                _ => None,
            };
            Ok(res.map(|inner| TappedBody { inner, watching }))
        })
    }
}

/// An open watch, until its body ends.
struct Watching {
    tap: WatchTap,
    path: String,
    opened: Instant,
    timeout: Option<Duration>,
    /// The server sent an ERROR event (410 Gone, say): its end of the stream follows.
    error_event: bool,
}

/// A response body; for a watch, its end is reported.
pub struct TappedBody<B> {
    inner: B,
    watching: Option<Watching>,
}

impl<B> Body for TappedBody<B>
where
    B: Body + Unpin,
    B::Data: AsRef<[u8]>,
    B::Error: std::fmt::Display,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(f))) = &polled
            && let Some(data) = f.data_ref()
            && let Some(w) = self.watching.as_mut()
            && contains(data.as_ref(), br#""type":"ERROR""#)
        {
            w.error_event = true;
        }
        let error = match &polled {
            Poll::Ready(Some(Err(e))) => Some(Some(e.to_string())),
            Poll::Ready(None) => Some(None),
            _ => None,
        };
        if let Some(error) = error
            && let Some(w) = self.watching.take()
        {
            let early = w.timeout.is_none_or(|t| w.opened.elapsed() + EARLY < t);
            match error {
                Some(e) => w.tap.send(WatchSignal::Cut {
                    path: w.path,
                    error: format!("the watch's connection was cut: {e}"),
                }),
                None if early && !w.error_event => w.tap.send(WatchSignal::Cut {
                    path: w.path,
                    error: format!(
                        "the server ended the watch after {:.0?}, before its timeout",
                        w.opened.elapsed()
                    ),
                }),
                None => {}
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_watch_requests_are_watched() {
        let req = |uri: &str| Request::get(uri).body(()).unwrap();
        assert_eq!(
            watch_of(&req(
                "/api/v1/pods?allowWatchBookmarks=true&timeoutSeconds=50&watch=true&resourceVersion=7"
            )),
            Some(("/api/v1/pods".into(), Some(Duration::from_secs(50))))
        );
        assert_eq!(
            watch_of(&req("/api/v1/namespaces/team/pods?watch=1")),
            Some(("/api/v1/namespaces/team/pods".into(), None))
        );
        assert_eq!(watch_of(&req("/api/v1/pods?limit=500")), None);
        assert_eq!(watch_of(&req("/api/v1/pods")), None);
    }

    #[test]
    fn queries_lose_their_empty_pairs() {
        let tidy = |uri: &str| tidy_query(&uri.parse().unwrap()).map(|u| u.to_string());
        assert_eq!(
            tidy("/api/v1/pods?&limit=500").as_deref(),
            Some("/api/v1/pods?limit=500")
        );
        assert_eq!(
            tidy("https://h:6443/apis/apps/v1/replicasets?&watch=true&&timeoutSeconds=50&")
                .as_deref(),
            Some("https://h:6443/apis/apps/v1/replicasets?watch=true&timeoutSeconds=50")
        );
        assert_eq!(tidy("/api/v1/pods?&").as_deref(), Some("/api/v1/pods"));
        assert_eq!(tidy("/api/v1/pods?limit=500&continue=abc%3D"), None);
        assert_eq!(tidy("/api/v1/pods"), None);
    }
}
