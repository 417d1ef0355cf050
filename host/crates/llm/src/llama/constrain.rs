//! Picking each token, optionally held to a grammar: llama.cpp's GBNF sampler, or llguidance
//! (a Lark grammar with JSON Schemas inline; its token masks take microseconds).
//!
//! Both are applied the way llama.cpp's own sampler does it: sample without the constraint
//! first and check only the chosen token; mask the vocabulary only when that token is rejected.
//! A GBNF grammar over ~49k candidates on every token made constrained generation ~100× slower
//! than free generation; masking only on a rejection, GBNF still cost ~40 % of the speed on the
//! 135M model, because JSON arguments are where the model's first choice is often rejected and
//! each rejection applies GBNF to the whole vocabulary. llguidance computes that mask from its
//! lexer and token trie instead.
use std::sync::{Arc, OnceLock};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};

/// llguidance's view of a model's vocabulary, built once per model (it walks the whole
/// vocabulary: tens of milliseconds for SmolLM2's 49k tokens).
#[derive(Default)]
pub struct Guidance {
    factory: OnceLock<Result<Arc<ParserFactory>, String>>,
}

impl Guidance {
    /// The parser factory for `model` (built on first use).
    pub fn factory(&self, model: &LlamaModel) -> Result<Arc<ParserFactory>, String> {
        self.factory
            .get_or_init(|| {
                let env = LlamaSampler::llguidance_tok_env(model);
                let mut factory = ParserFactory::new_simple(&env).map_err(|e| e.to_string())?;
                factory.quiet();
                Ok(Arc::new(factory))
            })
            .clone()
    }

    /// A matcher for the Lark grammar `lark`, or why it does not compile.
    pub fn compile(&self, model: &LlamaModel, lark: &str) -> Result<Matcher, String> {
        let factory = self.factory(model)?;
        let parser = factory.create_parser(TopLevelGrammar::from_lark(lark.to_string()));
        let matcher = Matcher::new(parser);
        match matcher.get_error() {
            Some(err) => Err(err),
            None => Ok(matcher),
        }
    }
}

/// What holds the output, if anything.
pub enum Constraint {
    Gbnf(LlamaSampler),
    Guide(Box<Matcher>),
}

impl Constraint {
    /// `gbnf`/`llguidance`, for the record.
    pub fn name(&self) -> &'static str {
        match self {
            Constraint::Gbnf(_) => "gbnf",
            Constraint::Guide(_) => "llguidance",
        }
    }
}

/// The sampler chain plus an optional constraint.
pub struct TokenSampler {
    pub chain: LlamaSampler,
    pub constraint: Option<Constraint>,
    /// Tokens whose first choice the constraint rejected (the vocabulary was masked).
    pub masked: u32,
    /// Added to the logits of these tokens (sorted) before sampling, in constrained generation,
    /// until each is generated once ([`TokenSampler::spend`]).
    pub bias: Vec<LlamaToken>,
    pub bias_value: f32,
}

fn id(t: LlamaToken) -> u32 {
    t.0.cast_unsigned()
}

impl TokenSampler {
    /// The logits of token `idx`, with `value` added to those of `bias` (sorted).
    fn candidates_of(
        bias: &[LlamaToken],
        value: f32,
        ctx: &LlamaContext<'_>,
        idx: i32,
    ) -> LlamaTokenDataArray {
        let mut candidates = ctx.token_data_array_ith(idx);
        if !bias.is_empty() && value != 0.0 {
            for d in candidates.data.iter_mut() {
                if bias.binary_search(&d.id()).is_ok() {
                    d.set_logit(d.logit() + value);
                }
            }
        }
        candidates
    }

    /// `token` was generated: it loses its bias. The bias is there so a small model copies the
    /// user's words; kept after a copy, it pulls the model back into the words it just wrote
    /// (`"I will be late. I will be late. I"` until the token limit, the largest single loss of
    /// the tool-calling evaluation).
    pub fn spend(&mut self, token: LlamaToken) {
        if let Ok(i) = self.bias.binary_search(&token) {
            self.bias.remove(i);
        }
    }

    pub fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32, eos: LlamaToken) -> LlamaToken {
        let token = match self.constraint.as_mut() {
            None => return self.chain.sample(ctx, idx),
            Some(Constraint::Gbnf(grammar)) => {
                let mut candidates = Self::candidates_of(&self.bias, self.bias_value, ctx, idx);
                candidates.apply_sampler(&mut self.chain);
                let first = candidates.selected_token().filter(|&t| {
                    let mut single =
                        LlamaTokenDataArray::new(vec![LlamaTokenData::new(t, 1.0, 0.0)], false);
                    single.apply_sampler(grammar);
                    single
                        .data
                        .first()
                        .is_some_and(|d| d.logit() != f32::NEG_INFINITY)
                });
                let token = match first {
                    Some(t) => t,
                    None => {
                        self.masked += 1;
                        let mut candidates =
                            Self::candidates_of(&self.bias, self.bias_value, ctx, idx);
                        candidates.apply_sampler(grammar);
                        candidates.apply_sampler(&mut self.chain);
                        // Every token rejected cannot happen with a grammar that has a next
                        // step; end the turn rather than panic if it does.
                        candidates.selected_token().unwrap_or(eos)
                    }
                };
                grammar.accept(token);
                token
            }
            Some(Constraint::Guide(matcher)) => {
                let mut candidates = Self::candidates_of(&self.bias, self.bias_value, ctx, idx);
                candidates.apply_sampler(&mut self.chain);
                let first = candidates
                    .selected_token()
                    .filter(|&t| matcher.validate_tokens(&[id(t)]).is_ok_and(|n| n == 1));
                let token = match first {
                    Some(t) => t,
                    None => {
                        self.masked += 1;
                        let mut candidates =
                            Self::candidates_of(&self.bias, self.bias_value, ctx, idx);
                        match matcher.compute_mask_or_eos() {
                            Ok(mask) => {
                                for d in candidates.data.iter_mut() {
                                    if !mask.is_allowed(id(d.id())) {
                                        d.set_logit(f32::NEG_INFINITY);
                                    }
                                }
                            }
                            Err(err) => {
                                tracing::warn!("llguidance failed, ending the answer: {err}");
                                return eos;
                            }
                        }
                        candidates.apply_sampler(&mut self.chain);
                        candidates.selected_token().unwrap_or(eos)
                    }
                };
                // A stopped matcher poisons itself on another token; the turn ends there anyway.
                if !matcher.is_stopped() {
                    let _ = matcher.consume_token(id(token));
                }
                token
            }
        };
        self.chain.accept(token);
        token
    }
}
