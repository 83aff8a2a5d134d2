"""The trainer of the augmented-loss runs (+AL, +REAL): the engine's, with one fused output-layer loss."""

from __future__ import annotations

from replicate.lstm import kernels
from replicate.lstm.train import Trainer


class AugmentedTrainer(Trainer):
    """The engine's trainer with CE + alpha * J_aug computed by one fused output-layer kernel
    (``AugmentedLoss.output_loss``) instead of logits + ``F.cross_entropy`` + ``extra_loss``: the same loss,
    proven equal in float64 (tests/test_inan_losses.py). ``REPLICATE_KERNELS=reference`` runs the engine's
    own ``_loss`` and the per-token transcription of J_aug."""

    def _loss(self, inputs, targets):
        if self.extra_loss is None or kernels.backend() == "reference":
            return super()._loss(inputs, targets)
        T, B = inputs.shape
        features, self.hidden = self.model(inputs, self.hidden)
        nll, j_aug = self.extra_loss.output_loss(features, targets, self.model)
        loss = nll / B + T * (self.extra_loss.alpha * j_aug / targets.numel())  # the engine's T * mean term
        if self.model.projection is not None:
            loss = loss + self.model.pr_penalty(self.cfg.pr_form, self.cfg.pr_lambda, B)
        return loss, nll.detach() / (T * B)
