"""Press & Wolf 2017 (with Zaremba et al. 2014's sizes): their table cells on the shared LSTM engine."""
