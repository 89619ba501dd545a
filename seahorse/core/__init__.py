"""What every feature shares: the runtime (settings, store, models, search state), time
(dates, windows, recency), progress lines, the model inventory and local usage records."""
