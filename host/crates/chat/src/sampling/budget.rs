//! How much of the model each server may use: requests and generated tokens per minute.
//!
//! A server that samples in a loop would otherwise keep the model (and the board's NPU) busy for
//! as long as it likes, with the user's approval given once ("for this session") or in the config
//! (`auto_approve`). The budget is per server over the last 60 seconds (a sliding window, so a
//! burst at the end of one minute does not double up with the start of the next). A request is
//! charged its `maxTokens` when it is let through and the tokens it really generated once it is
//! done; when fewer tokens remain than it asks for, it gets what remains.
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);

/// One request's charge.
#[derive(Debug)]
struct Charge {
    id: u64,
    at: Instant,
    tokens: u32,
}

/// The per-server accounts.
#[derive(Debug)]
pub struct SamplingBudget {
    requests_per_minute: u32,
    tokens_per_minute: u32,
    spent: HashMap<String, VecDeque<Charge>>,
    next_id: u64,
}

/// A request let through: settle it with the tokens it generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    pub server: String,
    id: u64,
    /// The request's `maxTokens` within what remains of the server's token budget.
    pub max_tokens: u32,
}

impl SamplingBudget {
    pub fn new(requests_per_minute: u32, tokens_per_minute: u32) -> Self {
        Self {
            requests_per_minute,
            tokens_per_minute,
            spent: HashMap::new(),
            next_id: 0,
        }
    }

    /// Lets a request asking for up to `max_tokens` through, or says why not and when to try
    /// again.
    pub fn admit(
        &mut self,
        server: &str,
        max_tokens: u32,
        now: Instant,
    ) -> Result<Admitted, String> {
        let (rpm, tpm) = (self.requests_per_minute, self.tokens_per_minute);
        let charges = self.spent.entry(server.to_string()).or_default();
        while charges
            .front()
            .is_some_and(|c| now.duration_since(c.at) >= WINDOW)
        {
            charges.pop_front();
        }
        let again = |charges: &VecDeque<Charge>| {
            charges
                .front()
                .map(|c| {
                    (WINDOW.saturating_sub(now.duration_since(c.at)))
                        .as_secs()
                        .max(1)
                })
                .unwrap_or(1)
        };
        if charges.len() as u64 >= u64::from(rpm) {
            return Err(format!(
                "sampling request from server `{server}` refused: it already made {rpm} request(s) \
                 in the last minute, its limit (`[sampling] requests_per_minute = {rpm}`); try again \
                 in {} s",
                again(charges)
            ));
        }
        let used: u64 = charges.iter().map(|c| u64::from(c.tokens)).sum();
        let left = u64::from(tpm).saturating_sub(used);
        if left == 0 {
            return Err(format!(
                "sampling request from server `{server}` refused: it has used its {tpm} tokens for \
                 the last minute (`[sampling] tokens_per_minute = {tpm}`); try again in {} s",
                again(charges)
            ));
        }
        let max_tokens = u32::try_from(left.min(u64::from(max_tokens.max(1)))).unwrap_or(u32::MAX);
        self.next_id += 1;
        let id = self.next_id;
        charges.push_back(Charge {
            id,
            at: now,
            tokens: max_tokens,
        });
        Ok(Admitted {
            server: server.to_string(),
            id,
            max_tokens,
        })
    }

    /// The request is done: its charge becomes the tokens it generated (0 when it failed before
    /// generating). The request itself still counts.
    pub fn settle(&mut self, admitted: &Admitted, generated: u32) {
        if let Some(charge) = self
            .spent
            .get_mut(&admitted.server)
            .and_then(|charges| charges.iter_mut().find(|c| c.id == admitted.id))
        {
            charge.tokens = generated.min(admitted.max_tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_beyond_the_per_minute_limit_wait_for_the_window_to_move() {
        let mut b = SamplingBudget::new(2, 10_000);
        let t0 = Instant::now();
        b.admit("ev", 10, t0).unwrap();
        b.admit("ev", 10, t0 + Duration::from_secs(10)).unwrap();
        let err = b.admit("ev", 10, t0 + Duration::from_secs(20)).unwrap_err();
        assert!(err.contains("server `ev`"), "{err}");
        assert!(err.contains("requests_per_minute = 2"), "{err}");
        assert!(err.contains("try again in 40 s"), "{err}");
        // Another server has its own account.
        b.admit("time", 10, t0 + Duration::from_secs(20)).unwrap();
        // 60 s after the first request, one slot is free again.
        b.admit("ev", 10, t0 + Duration::from_secs(60)).unwrap();
        assert!(b.admit("ev", 10, t0 + Duration::from_secs(61)).is_err());
    }

    #[test]
    fn tokens_are_charged_as_asked_then_as_generated_and_the_last_request_gets_what_is_left() {
        let mut b = SamplingBudget::new(100, 1000);
        let t0 = Instant::now();
        let first = b.admit("ev", 600, t0).unwrap();
        assert_eq!(first.max_tokens, 600);
        // While it runs, its whole maxTokens is reserved.
        assert_eq!(b.admit("ev", 600, t0).unwrap().max_tokens, 400);
        let err = b.admit("ev", 1, t0).unwrap_err();
        assert!(err.contains("tokens_per_minute = 1000"), "{err}");
        // It generated only 100: 500 come back.
        b.settle(&first, 100);
        assert_eq!(b.admit("ev", 800, t0).unwrap().max_tokens, 500);
        assert!(b.admit("ev", 1, t0 + Duration::from_secs(59)).is_err());
        assert_eq!(
            b.admit("ev", 800, t0 + Duration::from_secs(60))
                .unwrap()
                .max_tokens,
            800
        );
    }

    #[test]
    fn a_settled_charge_never_grows_past_what_was_admitted() {
        let mut b = SamplingBudget::new(100, 100);
        let t0 = Instant::now();
        let a = b.admit("ev", 10, t0).unwrap();
        b.settle(&a, 1_000_000);
        assert_eq!(b.admit("ev", 1000, t0).unwrap().max_tokens, 90);
    }
}
